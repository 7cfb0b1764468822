//go:build unix

package platform

// The BSD kernels' process records (kinfoLayout), kept here rather than
// in the per-OS files so that their decoding is tested on every unix.

// freebsdKinfo is struct kinfo_proc of FreeBSD's sys/sys/user.h on 64-bit
// architectures (KINFO_PROC_SIZE 1088 on amd64, arm64 and riscv64): ki_pid
// at 72, ki_start (struct timeval: int64 tv_sec, int64 tv_usec) at 336,
// ki_stat at 388 (SZOMB 5, sys/sys/proc.h). Offsets as computed by cgo
// -godefs from that header (see also the KinfoProc of
// github.com/shirou/gopsutil/process for freebsd/riscv64). The 32-bit
// layouts (386 with a 32-bit time_t, arm) are not decoded: there
// StartTime says "?".
var freebsdKinfo = kinfoLayout{
	size: 1088, sizeField: true, pidAt: 72, statAt: 388, zombies: []byte{5},
	validAt: -1, secAt: 336, secSize: 8, usecAt: 344, usecSize: 8,
}

// netbsdKinfo is struct kinfo_proc2 of NetBSD's sys/sys/sysctl.h, laid out
// the same on every architecture (fixed-size fields, 64-bit aligned):
// p_pid at 116, p_stat at 360 (SZOMB 5, SDEAD 6: sys/sys/proc.h),
// p_uvalid (int64) at 448, p_ustart_sec and p_ustart_usec (uint32) at 456
// and 460; 680 bytes in all.
var netbsdKinfo = kinfoLayout{
	size: 680, pidAt: 116, statAt: 360, zombies: []byte{5, 6},
	validAt: 448, secAt: 456, secSize: 4, usecAt: 460, usecSize: 4,
}

// openbsdKinfo is struct kinfo_proc of OpenBSD's sys/sys/sysctl.h, laid
// out the same on every architecture (fixed-size fields, 64-bit aligned):
// p_pid at 108, p_stat at 304 (SZOMB 5, SDEAD 6: sys/sys/proc.h),
// p_uvalid (int64) at 400, p_ustart_sec (uint64) at 408, p_ustart_usec
// (uint32) at 416; 616 bytes in all (cgo -godefs, as in the KinfoProc of
// github.com/shirou/gopsutil/process for openbsd/amd64).
var openbsdKinfo = kinfoLayout{
	size: 616, pidAt: 108, statAt: 304, zombies: []byte{5, 6},
	validAt: 400, secAt: 408, secSize: 8, usecAt: 416, usecSize: 4,
}
