package s3store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"shoal/internal/object"
)

// proxy is a loopback TCP forwarder that a test can take down and bring
// back, to play an S3 server restart without touching the shared server.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *proxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	go func() { io.Copy(s, c); s.Close() }()
	io.Copy(c, s)
	c.Close()
}

// down closes the listener and every open connection.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// up listens again on the same address.
func (p *proxy) up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("proxy up: %v", err)
		return
	}
	p.serve(ln)
}

func TestOutageRetried(t *testing.T) {
	cfg := testConfig(t)
	newTestStore(t) // creates the bucket if needed, cleans up the prefix
	px := newProxy(t, cfg.Endpoint)
	cfg.Endpoint = px.addr
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := object.WithRetry(s, 8, 100*time.Millisecond)
	ctx := context.Background()
	if err := r.Put(ctx, "k", strings.NewReader("before"), 6); err != nil {
		t.Fatal(err)
	}
	defer s.Delete(ctx, "k")

	px.down()
	start := time.Now()
	_, err = s.Head(ctx, "k")
	if err == nil || errors.Is(err, object.ErrNotExist) || object.IsPermanent(err) {
		t.Fatalf("Head while down = %v, want a transient error", err)
	}
	t.Logf("Head while down failed after %v: %v", time.Since(start), err)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Head while down took %v; retries are not bounded", d)
	}

	time.AfterFunc(500*time.Millisecond, px.up)
	if err := r.Put(ctx, "k", strings.NewReader("after!"), 6); err != nil {
		t.Fatalf("Put across a restart: %v", err)
	}
	rc, err := r.Get(ctx, "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "after!" {
		t.Fatalf("Get = %q", data)
	}
}
