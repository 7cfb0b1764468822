// Package api holds the definitions behind the public names every
// cleolease base shares (package writer re-exports them; package cleolease
// and each base's package keep them by alias): the typed errors, the
// configuration values, and Config with its DSN parameters. It imports no
// base driver, so that the driver core (internal/core) and every base can
// use it.
package api
