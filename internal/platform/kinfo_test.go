//go:build unix

package platform

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The records below mirror the C structs field by field, transcribed from
// the public headers named in proc_start_*.go, up to the fields StartTime
// reads; Go lays them out as the C compilers of a 64-bit little-endian
// machine do, so their bytes are real records (padded to the full size)
// and check the offsets in the layouts independently.

type freebsdTimeval struct{ Sec, Usec int64 }

// freebsdKinfoHead is struct kinfo_proc (FreeBSD sys/sys/user.h, LP64) up
// to ki_stat.
type freebsdKinfoHead struct {
	Structsize, Layout                                    int32
	Args, Paddr, Addr, Tracep, Textvp, Fd, Vmspace, Wchan uint64
	Pid, Ppid, Pgid, Tpgid, Sid, Tsid                     int32
	Jobc, SpareShort1                                     int16
	TdevFreebsd11                                         uint32
	Siglist, Sigmask, Sigignore, Sigcatch                 [16]byte
	UID, Ruid, Svuid, Rgid, Svgid                         uint32
	Ngroups, SpareShort2                                  int16
	Groups                                                [16]uint32
	Size                                                  uint64
	Rssize, Swrss, Tsize, Dsize, Ssize                    int64
	Xstat, Acflag                                         uint16
	Pctcpu, Estcpu, Slptime, Swtime, Cow                  uint32
	Runtime                                               uint64
	Start, Childtime                                      freebsdTimeval
	Flag, Kiflag                                          int64
	Traceflag                                             int32
	Stat                                                  uint8
}

// netbsdKinfo2Head is struct kinfo_proc2 (NetBSD sys/sys/sysctl.h) up to
// p_ustart_usec.
type netbsdKinfo2Head struct {
	Forw, Back, Paddr, Addr, Fd, Cwdi, Stats, Limit, Vmspace, Sigacts, Sess, Tsess, Ru uint64
	Eflag, Exitsig, Flag, Pid, Ppid, Sid, Pgid, Tpgid                                  int32
	UID, Ruid, Gid, Rgid                                                               uint32
	Groups                                                                             [16]uint32
	Ngroups, Jobc                                                                      int16
	Tdev, Estcpu, RtimeSec, RtimeUsec                                                  uint32
	Cpticks                                                                            int32
	Pctcpu, Swtime, Slptime                                                            uint32
	Schedflags                                                                         int32
	Uticks, Sticks, Iticks, Tracep                                                     uint64
	Traceflag, Holdcnt                                                                 int32
	Siglist, Sigmask, Sigignore, Sigcatch                                              [4]uint32
	Stat                                                                               int8
	Priority, Usrpri, Nice                                                             uint8
	Xstat, Acflag                                                                      uint16
	Comm                                                                               [24]byte
	Wmesg                                                                              [8]byte
	Wchan                                                                              uint64
	Login                                                                              [24]byte
	VMRssize, VMTsize, VMDsize, VMSsize                                                int32
	Uvalid                                                                             int64
	UstartSec, UstartUsec                                                              uint32
}

// openbsdKinfoHead is struct kinfo_proc (OpenBSD sys/sys/sysctl.h) up to
// p_ustart_usec.
type openbsdKinfoHead struct {
	Forw, Back, Paddr, Addr, Fd, Stats, Limit, Vmspace, Sigacts, Sess, Tsess, Ru uint64
	Eflag, Exitsig, Flag, Pid, Ppid, Sid, Pgid, Tpgid                            int32
	UID, Ruid, Gid, Rgid                                                         uint32
	Groups                                                                       [16]uint32
	Ngroups, Jobc                                                                int16
	Tdev, Estcpu, RtimeSec, RtimeUsec                                            uint32
	Cpticks                                                                      int32
	Pctcpu, Swtime, Slptime                                                      uint32
	Schedflags                                                                   int32
	Uticks, Sticks, Iticks, Tracep                                               uint64
	Traceflag, Holdcnt, Siglist                                                  int32
	Sigmask, Sigignore, Sigcatch                                                 uint32
	Stat                                                                         int8
	Priority, Usrpri, Nice                                                       uint8
	Xstat, Acflag                                                                uint16
	Comm                                                                         [24]byte
	Wmesg                                                                        [8]byte
	Wchan                                                                        uint64
	Login                                                                        [32]byte
	VMRssize, VMTsize, VMDsize, VMSsize                                          int32
	Uvalid                                                                       int64
	UstartSec                                                                    uint64
	UstartUsec                                                                   uint32
}

// freebsd386KinfoHead is struct kinfo_proc (FreeBSD sys/sys/user.h) as
// FreeBSD/i386 lays it out, up to ki_stat: 4-byte pointers, longs,
// vm_size_t and segsz_t, a 32-bit time_t, and ki_runtime as two 32-bit
// words (i386 aligns 64-bit integers on 4 bytes; Go on amd64 would on 8).
type freebsd386KinfoHead struct {
	Structsize, Layout                                    int32
	Args, Paddr, Addr, Tracep, Textvp, Fd, Vmspace, Wchan uint32
	Pid, Ppid, Pgid, Tpgid, Sid, Tsid                     int32
	Jobc, SpareShort1                                     int16
	TdevFreebsd11                                         uint32
	Siglist, Sigmask, Sigignore, Sigcatch                 [16]byte
	UID, Ruid, Svuid, Rgid, Svgid                         uint32
	Ngroups, SpareShort2                                  int16
	Groups                                                [16]uint32
	Size                                                  uint32
	Rssize, Swrss, Tsize, Dsize, Ssize                    int32
	Xstat, Acflag                                         uint16
	Pctcpu, Estcpu, Slptime, Swtime, Cow                  uint32
	Runtime                                               [2]uint32
	StartSec, StartUsec, ChildSec, ChildUsec              int32
	Flag, Kiflag                                          int32
	Traceflag                                             int32
	Stat                                                  uint8
}

// dragonflyKinfoHead is struct kinfo_proc (DragonFly sys/sys/kinfo.h,
// amd64) up to kp_pid.
type dragonflyKinfoHead struct {
	Paddr                                uint64
	Flags, Stat, Lock, Acflag, Traceflag int32
	Fd                                   uint64
	Siglist, Sigignore, Sigcatch         [16]byte
	Sigflag                              int32
	Start                                freebsdTimeval
	Comm                                 [17]byte
	UID                                  uint32
	Ngroups                              int16
	Groups                               [16]uint32
	Ruid, Svuid, Rgid, Svgid             uint32
	Pid                                  int32
}

// record returns the bytes of *p padded with zeroes to size.
func record[T any](t *testing.T, p *T, size int) []byte {
	t.Helper()
	n := int(unsafe.Sizeof(*p))
	if n > size {
		t.Fatalf("mirror struct is %d bytes, more than the record's %d", n, size)
	}
	b := make([]byte, size)
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(p)), n))
	return b
}

func TestKinfoStartTime(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 || unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the mirror structs give the records' bytes on 64-bit little-endian machines only")
	}
	const pid = 4242
	fb := func(f func(*freebsdKinfoHead)) []byte {
		k := freebsdKinfoHead{Structsize: 1088, Pid: pid, Stat: 2, Start: freebsdTimeval{1700000000, 42}}
		f(&k)
		return record(t, &k, freebsdKinfo.size)
	}
	nb := func(f func(*netbsdKinfo2Head)) []byte {
		k := netbsdKinfo2Head{Pid: pid, Stat: 2, Uvalid: 1, UstartSec: 1700000000, UstartUsec: 987654}
		f(&k)
		return record(t, &k, netbsdKinfo.size)
	}
	ob := func(f func(*openbsdKinfoHead)) []byte {
		k := openbsdKinfoHead{Pid: pid, Stat: 7, Uvalid: 1, UstartSec: 1700000001, UstartUsec: 5}
		f(&k)
		return record(t, &k, openbsdKinfo.size)
	}
	f386 := func(f func(*freebsd386KinfoHead)) []byte {
		k := freebsd386KinfoHead{Structsize: 768, Pid: pid, Stat: 2, StartSec: 1700000002, StartUsec: 7}
		f(&k)
		return record(t, &k, freebsdKinfo386.size)
	}
	df := func(f func(*dragonflyKinfoHead)) []byte {
		k := dragonflyKinfoHead{Pid: pid, Stat: 2, Start: freebsdTimeval{1700000003, 999999}}
		f(&k)
		// The record is longer than what is read (rusage, kinfo_lwp).
		return record(t, &k, 1024)
	}
	same := func(*freebsdKinfoHead) {}
	cases := []struct {
		name   string
		layout kinfoLayout
		rec    []byte
		want   string
	}{
		{"freebsd running", freebsdKinfo, fb(same), "1700000000.000042"},
		{"freebsd zombie", freebsdKinfo, fb(func(k *freebsdKinfoHead) { k.Stat = 5 }), ""},
		{"freebsd other struct size", freebsdKinfo, fb(func(k *freebsdKinfoHead) { k.Structsize = 1096 }), "?"},
		{"freebsd other pid", freebsdKinfo, fb(func(k *freebsdKinfoHead) { k.Pid = pid + 1 }), "?"},
		{"freebsd no start time", freebsdKinfo, fb(func(k *freebsdKinfoHead) { k.Start = freebsdTimeval{} }), "?"},
		{"freebsd bad usec", freebsdKinfo, fb(func(k *freebsdKinfoHead) { k.Start.Usec = 1e6 }), "?"},
		{"freebsd short", freebsdKinfo, fb(same)[:400], "?"},
		{"freebsd no record", freebsdKinfo, nil, ""},
		{"freebsd/386 running", freebsdKinfo386, f386(func(*freebsd386KinfoHead) {}), "1700000002.000007"},
		{"freebsd/386 zombie", freebsdKinfo386, f386(func(k *freebsd386KinfoHead) { k.Stat = 5 }), ""},
		{"freebsd/386 a 64-bit record", freebsdKinfo386, fb(same), "?"},
		{"freebsd/386 other pid", freebsdKinfo386, f386(func(k *freebsd386KinfoHead) { k.Pid = 1 }), "?"},
		{"freebsd/386 no start time", freebsdKinfo386, f386(func(k *freebsd386KinfoHead) { k.StartSec = 0 }), "?"},
		{"dragonfly running", dragonflyKinfo, df(func(*dragonflyKinfoHead) {}), "1700000003.999999"},
		{"dragonfly zombie", dragonflyKinfo, df(func(k *dragonflyKinfoHead) { k.Stat = 4 }), ""},
		{"dragonfly stopped", dragonflyKinfo, df(func(k *dragonflyKinfoHead) { k.Stat = 3 }), "1700000003.999999"},
		{"dragonfly other pid", dragonflyKinfo, df(func(k *dragonflyKinfoHead) { k.Pid = pid + 1 }), "?"},
		{"dragonfly no start time", dragonflyKinfo, df(func(k *dragonflyKinfoHead) { k.Start = freebsdTimeval{} }), "?"},
		{"dragonfly short", dragonflyKinfo, df(func(*dragonflyKinfoHead) {})[:200], "?"},
		{"netbsd running", netbsdKinfo, nb(func(*netbsdKinfo2Head) {}), "1700000000.987654"},
		{"netbsd zombie", netbsdKinfo, nb(func(k *netbsdKinfo2Head) { k.Stat = 5 }), ""},
		{"netbsd dead", netbsdKinfo, nb(func(k *netbsdKinfo2Head) { k.Stat = 6 }), ""},
		{"netbsd start not filled in", netbsdKinfo, nb(func(k *netbsdKinfo2Head) { k.Uvalid = 0 }), "?"},
		{"netbsd no record", netbsdKinfo, []byte{}, ""},
		{"openbsd running", openbsdKinfo, ob(func(*openbsdKinfoHead) {}), "1700000001.000005"},
		{"openbsd zombie", openbsdKinfo, ob(func(k *openbsdKinfoHead) { k.Stat = 5 }), ""},
		{"openbsd start not filled in", openbsdKinfo, ob(func(k *openbsdKinfoHead) { k.Uvalid = 0 }), "?"},
		{"openbsd other pid", openbsdKinfo, ob(func(k *openbsdKinfoHead) { k.Pid = 1 }), "?"},
	}
	for _, c := range cases {
		if got := c.layout.startTime(c.rec, pid, binary.LittleEndian); got != c.want {
			t.Errorf("%s: startTime = %q, want %q", c.name, got, c.want)
		}
	}
}

// A big-endian record (OpenBSD on powerpc64 and mips64) is read in its
// own byte order.
func TestKinfoStartTimeBigEndian(t *testing.T) {
	rec := make([]byte, openbsdKinfo.size)
	binary.BigEndian.PutUint32(rec[108:], 77)         // p_pid
	rec[304] = 7                                      // p_stat: SONPROC
	binary.BigEndian.PutUint64(rec[400:], 1)          // p_uvalid
	binary.BigEndian.PutUint64(rec[408:], 1600000000) // p_ustart_sec
	binary.BigEndian.PutUint32(rec[416:], 123456)     // p_ustart_usec
	if got, want := openbsdKinfo.startTime(rec, 77, binary.BigEndian), "1600000000.123456"; got != want {
		t.Errorf("startTime = %q, want %q", got, want)
	}
}

// startFromSysctl: ESRCH is gone; another error leaves the pid's
// existence only.
func TestStartFromSysctl(t *testing.T) {
	yes := func(int64) bool { return true }
	no := func(int64) bool { return false }
	cases := []struct {
		name   string
		err    error
		exists func(int64) bool
		want   string
	}{
		{"ESRCH", unix.ESRCH, yes, ""},
		{"EPERM, pid exists", unix.EPERM, yes, "?"},
		{"EPERM, pid gone", unix.EPERM, no, ""},
		{"wrapped ENOMEM", errors.Join(errors.New("sysctl"), unix.ENOMEM), yes, "?"},
	}
	for _, c := range cases {
		if got := startFromSysctl(nil, c.err, 9, openbsdKinfo, c.exists); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// An unknown start time never matches, not even another unknown: a pid
// reused after its holder died must not pass for the holder.
func TestCompareStart(t *testing.T) {
	cases := []struct {
		recorded, current string
		want              startMatch
	}{
		{"1700000000.000042", "1700000000.000042", startSame},
		{"1700000000.000042", "1700000099.000001", startDiffers},
		{"1700000000.000042", "", startDiffers},
		{"?", "", startDiffers},
		{"?", "?", startUnknown},
		{"?", "1700000000.000042", startUnknown},
		{"1700000000.000042", "?", startUnknown},
	}
	for _, c := range cases {
		if got := compareStart(c.recorded, c.current); got != c.want {
			t.Errorf("compareStart(%q, %q) = %v, want %v", c.recorded, c.current, got, c.want)
		}
	}
}

// Each FreeBSD architecture gets the layout of its record, and one whose
// layout is not decoded gets none (StartTime then says "?").
func TestFreebsdLayout(t *testing.T) {
	for _, c := range []struct {
		goarch string
		size   int
	}{{"amd64", 1088}, {"arm64", 1088}, {"riscv64", 1088}, {"386", 768}, {"arm", 0}} {
		l, ok := freebsdLayout(c.goarch)
		if ok != (c.size != 0) || l.size != c.size {
			t.Errorf("%s: layout of %d bytes (%v), want %d", c.goarch, l.size, ok, c.size)
		}
	}
}
