package kvtest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of a database server. Tests use
// it to make the server vanish and come back for one store only, without
// disturbing the shared server other tests use: Down drops every
// connection and refuses new ones; Up accepts again on the same address.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	latency atomic.Int64 // added to each client→server write, ns
	turns   atomic.Int64 // round trips: see RoundTrips
	pg      atomic.Bool  // count PostgreSQL statements (CountPostgres)
	stmts   atomic.Int64 // statements: see Statements
}

// NewProxy starts a proxy to target (host:port) on a free loopback port.
// It stops when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	p := &Proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Down)
	return p
}

// SetLatency delays everything the client sends by d (0: none), which
// makes round trips count in benchmarks on a noisy machine.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// RoundTrips counts the client's turns to speak so far, over every
// connection: a burst of client→server data after the server answered
// (or the first on a connection) is one round trip. A test reads it
// before and after an operation, run alone, to count what it costs.
func (p *Proxy) RoundTrips() int64 { return p.turns.Load() }

// CountPostgres makes the proxy count, on the connections it accepts from
// now on, the statements a PostgreSQL client sends (without TLS): see
// Statements.
func (p *Proxy) CountPostgres() { p.pg.Store(true) }

// Statements counts the statements PostgreSQL clients sent so far, over
// every connection accepted since CountPostgres: each statement of the
// extended protocol (BEGIN and COMMIT included) and each simple query.
func (p *Proxy) Statements() int64 { return p.stmts.Load() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Down closes the listener and every proxied connection.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Up listens again on the same address.
func (p *Proxy) Up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("proxy relisten on %s: %v", p.addr, err)
		return
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

// pipe connects c to the target and copies both ways until either ends.
func (p *Proxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	done := make(chan struct{}, 2)
	var answered atomic.Bool // the server spoke since the client last did
	answered.Store(true)
	cp := func(dst, src net.Conn, delay *atomic.Int64, chunk func([]byte)) {
		p.copy(dst, src, delay, chunk) // a closed connection ends the copy
		done <- struct{}{}
	}
	var stmts *pgStatements
	if p.pg.Load() {
		stmts = &pgStatements{count: func() { p.stmts.Add(1) }}
	}
	go cp(s, c, &p.latency, func(b []byte) {
		if answered.Swap(false) {
			p.turns.Add(1)
		}
		if stmts != nil {
			stmts.feed(b)
		}
	})
	go cp(c, s, nil, func([]byte) { answered.Store(true) })
	<-done
	_ = c.Close()
	_ = s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// copy copies src to dst, calling chunk with the bytes before each write and sleeping
// *delay (if set) before it.
func (p *Proxy) copy(dst, src net.Conn, delay *atomic.Int64, chunk func([]byte)) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk(buf[:n])
			if delay != nil {
				if d := time.Duration(delay.Load()); d > 0 {
					time.Sleep(d)
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// track registers a connection pair, or closes it if the proxy went down
// meanwhile.
func (p *Proxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = c.Close()
		_ = s.Close()
		return false
	}
	p.conns[c], p.conns[s] = true, true
	return true
}
