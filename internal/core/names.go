package core

import "github.com/cleocode/cleolease/internal/api"

// The public names the core uses, under the names the driver's code has
// always used (internal/api declares them; package writer and each base's
// package re-export them).

type (
	ConfigError       = api.ConfigError
	LeaseError        = api.LeaseError
	DSNError          = api.DSNError
	NetworkFS         = api.NetworkFS
	NetworkFSError    = api.NetworkFSError
	ReplicaError      = api.ReplicaError
	ReplicaMigrations = api.ReplicaMigrations
	Migrator          = api.Migrator
	Mode              = api.Mode
)

const (
	ModeOff         = api.ModeOff
	ModeLocal       = api.ModeLocal
	ModeRequire     = api.ModeRequire
	NetworkFSAllow  = api.NetworkFSAllow
	NetworkFSRefuse = api.NetworkFSRefuse
	ReplicaOpen     = api.ReplicaOpen
	ReplicaWait     = api.ReplicaWait
)

var (
	ErrConnectorClosed    = api.ErrConnectorClosed
	ErrEngineNotOpen      = api.ErrEngineNotOpen
	ErrExclusiveLocking   = api.ErrExclusiveLocking
	ErrFileChanged        = api.ErrFileChanged
	ErrForeignTransaction = api.ErrForeignTransaction
	ErrLeaseLost          = api.ErrLeaseLost
	ErrLeaseUnavailable   = api.ErrLeaseUnavailable
	ErrNetworkFS          = api.ErrNetworkFS
	ErrPrivateMemory      = api.ErrPrivateMemory
	ErrReplica            = api.ErrReplica
	ErrSidecarDir         = api.ErrSidecarDir
)
