package lease

import (
	"sync/atomic"
	"time"
)

// epochMemory is what this process remembers of a lane's epochs: the
// highest it has seen the lane carry, so that a row inserted after the
// lane's rows were lost starts above it (floor), and, for an in-memory
// engine, the epochs it issues itself (next). It is safe for concurrent
// use (one atomic word) and needs none of the lane's locks.
type epochMemory struct {
	high atomic.Int64 // the highest epoch seen or issued (0: none)
}

// note raises the high-water mark to epoch.
func (m *epochMemory) note(epoch int64) {
	for {
		cur := m.high.Load()
		if epoch <= cur || m.high.CompareAndSwap(cur, epoch) {
			return
		}
	}
}

// next issues the next epoch of an in-memory engine's lane (Options.
// MemoryOnly: no table, so this memory is the lane's only record of its
// epochs). Only the owner of the lane's gate calls it.
func (m *epochMemory) next() int64 { return m.high.Add(1) }

// floor is the lowest epoch, at wall-clock time now, a lane whose row must
// be inserted (a new lane, or one whose row or tables were deleted) may be
// granted: now in microseconds since the Unix epoch, and above every epoch
// this process has seen the lane carry (note). The statement that inserts
// the row takes the greater of this and the highest epoch of the lane's
// remaining rows + 1; every other grant rewrites the lane's row with its
// epoch + 1, as before (grantTo, store.go; takeoverFloor, takeover.go).
//
// Why epochs keep increasing when the rows are lost. A lane's epochs start
// at the floor, and every later grant adds 1 in its own SQLite write
// transaction; such a transaction takes well over a microsecond, and the
// transactions of one file follow each other, so an epoch never runs
// ahead of the clock reading taken when it was issued. A row inserted
// after the loss takes the clock at that later moment: higher than any
// epoch issued before, as long as the clock that reads it does not stand
// behind the clock that issued them. On one host that is one clock: it
// holds unless the wall clock is stepped back between the two (by the
// size of the step); across hosts sharing a file (a LiteFS failover, say)
// it holds when their clocks differ by less than the time between the last
// grant of one and the first of the other. The in-memory high-water mark
// covers a step back within one process. Epochs stay int64 and below
// 1<<62 (readActive's bound) for the next 146,000 years, and below 2^53
// (exact in JSON numbers read as doubles) until the year 2255. Lanes of
// files created before this floor started at 1 and keep counting from
// there, far below any floor.
func (m *epochMemory) floor(now time.Time) int64 {
	return max(now.UnixMicro(), m.high.Load()+1)
}
