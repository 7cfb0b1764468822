//go:build unix

package platform

// The BSD kernels' process records (kinfoLayout), kept here rather than
// in the per-OS files so that their decoding is tested on every unix.

// freebsdKinfo is struct kinfo_proc of FreeBSD's sys/sys/user.h on 64-bit
// architectures (KINFO_PROC_SIZE 1088 on amd64, arm64 and riscv64): ki_pid
// at 72, ki_start (struct timeval: int64 tv_sec, int64 tv_usec) at 336,
// ki_stat at 388 (SZOMB 5, sys/sys/proc.h). Offsets as computed by cgo
// -godefs from that header (see also the KinfoProc of
// github.com/shirou/gopsutil/process for freebsd/riscv64).
var freebsdKinfo = kinfoLayout{
	size: 1088, sizeField: true, pidAt: 72, statAt: 388, zombies: []byte{5},
	validAt: -1, secAt: 336, secSize: 8, usecAt: 344, usecSize: 8,
}

// freebsdKinfo386 is the same struct kinfo_proc on FreeBSD/i386
// (KINFO_PROC_SIZE 768): pointers, longs, vm_size_t and segsz_t of 4
// bytes, 64-bit integers aligned on 4 bytes (the i386 ABI; ki_runtime
// falls on 272 either way) and a 32-bit time_t: ki_pid at 40, ki_start
// (int32 tv_sec, int32 tv_usec) at 280, ki_stat at 308 (as in the
// KinfoProc of github.com/shirou/gopsutil/process for freebsd/386, cgo
// -godefs). FreeBSD/arm (64-bit time_t, 8-byte aligned 64-bit integers)
// is not decoded: no layout for it was checked against its headers, so
// there StartTime says "?".
var freebsdKinfo386 = kinfoLayout{
	size: 768, sizeField: true, pidAt: 40, statAt: 308, zombies: []byte{5},
	validAt: -1, secAt: 280, secSize: 4, usecAt: 284, usecSize: 4,
}

// dragonflyKinfo is struct kinfo_proc of DragonFly's sys/sys/kinfo.h on
// amd64 (DragonFly's only Go port): kp_stat (enum procstat, 4 bytes;
// SZOMB 4 in sys/sys/proc.h) at 12, kp_start (struct timeval: int64
// tv_sec, int64 tv_usec) at 96 after three 16-byte sigset_t, kp_pid at
// 220 after kp_comm[17], kp_uid, kp_ngroups, kp_groups[16] and four ids.
// The struct has no size field and its tail (rusage, kinfo_lwp) is not
// read: size is the bytes through kp_pid, and the pid read back must be
// the one asked for.
var dragonflyKinfo = kinfoLayout{
	size: 224, pidAt: 220, statAt: 12, zombies: []byte{4},
	validAt: -1, secAt: 96, secSize: 8, usecAt: 104, usecSize: 8,
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

// freebsdLayout returns the struct kinfo_proc layout of FreeBSD on the
// architecture goarch (a GOARCH value); false where none is decoded.
func freebsdLayout(goarch string) (kinfoLayout, bool) {
	switch goarch {
	case "amd64", "arm64", "riscv64":
		return freebsdKinfo, true
	case "386":
		return freebsdKinfo386, true
	}
	return kinfoLayout{}, false
}
