package lease

import "testing"

// The decision of a settle that finds a row naming this process after a
// claim of it quit (issue 38 item 1): an engine opened since the process
// last used the lane remembers no epoch (epochs.high 0); its claim read
// another holder's row at epoch 6 and quit while the write lock was
// taken; a restore in place then brought back a row naming this process
// at epoch 5. Adopting that row would hand the lane on at epoch 6, which
// the file issued before the restore. A grant to the claim follows the
// row it read, so only a row above epoch 6 may be one.
func TestLateGrantIsAboveTheRowTheClaimRead(t *testing.T) {
	e := openEngine(t, newDB(t), nil)
	me := holder{ID: e.holderID}
	for _, c := range []struct {
		name  string
		seen  rowRef
		epoch int64
		want  bool
	}{
		{"restored row below the other holder's the claim read", rowRef{holder: "cl-other", epoch: 6, known: true}, 5, false},
		{"restored row at the other holder's epoch", rowRef{holder: "cl-other", epoch: 6, known: true}, 6, false},
		{"grant after the other holder's row", rowRef{holder: "cl-other", epoch: 6, known: true}, 7, true},
		{"row the claim read naming this process", rowRef{holder: e.holderID, epoch: 6, known: true}, 6, false},
		{"grant of a lane the claim found free", rowRef{known: true}, 3, true},
		{"grant when the claim could not read the row", rowRef{}, 3, true},
	} {
		l := newLane(e, "s", c.name)
		job := settler{quit: true, seen: c.seen}
		if got := l.lateGrant(job, &row{epoch: c.epoch, h: me}); got != c.want {
			t.Errorf("%s: lateGrant of epoch %d after the claim read %+v: %v, want %v", c.name, c.epoch, c.seen, got, c.want)
		}
	}
	// The seeded hole (holes.unboundedLateGrant) is this decision
	// reverted: the restored row below the other holder's is adopted.
	e.os.holes.unboundedLateGrant = true
	defer func() { e.os.holes.unboundedLateGrant = false }()
	l := newLane(e, "s", "hole")
	if !l.lateGrant(settler{quit: true, seen: rowRef{holder: "cl-other", epoch: 6, known: true}}, &row{epoch: 5, h: me}) {
		t.Error("with the hole put back, the restored row below the other holder's is still refused: the seam reverts nothing")
	}
}

// A claim's reads of other holders' rows raise the lane's epoch memory,
// so that a row of this process at or below them is never taken for a
// grant, whatever the claim that read them went on to do.
func TestClaimReadsRaiseTheEpochMemory(t *testing.T) {
	e := openEngine(t, newDB(t), nil)
	l := newLane(e, "s", "l")
	c := &claimRun{l: l}
	c.saw(&row{epoch: 6, h: holder{ID: "cl-other"}})
	if l.newEpoch(6) || !l.newEpoch(7) {
		t.Fatalf("after a claim read epoch 6, epochs.high is %d, want 6", l.epochs.high.Load())
	}
}
