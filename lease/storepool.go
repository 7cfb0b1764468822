package lease

import (
	"database/sql"
	"sync"
)

// storePool is the engine's database/sql pool of its one connection of
// its own (leaseConnector), made at its first use: sql.OpenDB starts a
// goroutine per pool, which a process that never takes a lease (its lease
// tables found complete: Options.TablesReady) need not start and stop.
type storePool struct {
	conn *leaseConnector // set once, by openStore, before any use

	mu     sync.Mutex
	db     *sql.DB // nil until the first get
	closed bool
}

// get returns the pool, making it at the first call. After close it
// returns a closed pool, whose every use fails ("sql: database is
// closed"), as the engine's pool did before it was made lazily.
func (p *storePool) get() *sql.DB {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.db == nil {
		p.db = sql.OpenDB(p.conn)
		p.db.SetMaxOpenConns(1)
		p.db.SetMaxIdleConns(1)
		p.db.SetConnMaxLifetime(0)
		if p.closed {
			p.db.Close()
		}
	}
	return p.db
}

// close closes the pool if it was made; later gets return it closed.
func (p *storePool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.db == nil {
		return nil
	}
	return p.db.Close()
}

// db is the engine's pool of its own connection (storePool).
func (e *Engine) db() *sql.DB { return e.store.get() }
