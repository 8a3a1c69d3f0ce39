package sqlkv

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"shoal/internal/meta/kv"
	"shoal/internal/meta/kv/kvtest"
)

// guessPair opens two stores on one schema, the first through a proxy
// counting round trips and statements.
func guessPair(t *testing.T) (a, b kv.Store, p *kvtest.Proxy) {
	raw := pgSchemaURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p = kvtest.NewProxy(t, u.Host)
	p.CountPostgres()
	u.Host = p.Addr()
	if a, err = Open(context.Background(), u.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b, p
}

// add returns a Txn adding n to the decimal number under k (absent: 0).
func add(k []byte, n int) func(kv.Tx) error {
	return func(tx kv.Tx) error {
		v, err := tx.Get(k)
		if err != nil {
			return err
		}
		x := 0
		if v != nil {
			if x, err = strconv.Atoi(string(v)); err != nil {
				return err
			}
		}
		tx.Set(k, []byte(strconv.Itoa(x+n)))
		return nil
	}
}

func getNumber(t *testing.T, s kv.Store, k []byte) string {
	t.Helper()
	v, err := kv.GetOne(context.Background(), s, k)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestPostgresGuessedReads: a read-modify-write Txn of a key the store
// wrote itself is one round trip (BEGIN, the guard of the guessed read,
// the write and COMMIT in one pipeline); after another store changed the
// key, the guess misses and the Txn runs again on the real value; a Txn
// whose fn fails on a guess is run again on real reads, so the error
// returned is one the database's state gives.
func TestPostgresGuessedReads(t *testing.T) {
	a, b, p := guessPair(t)
	ctx := context.Background()
	k := []byte("counter")
	for range 2 { // the second prepares the guard on the connection
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		trips, stmts := p.RoundTrips(), p.Statements()
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
		trips, stmts = p.RoundTrips()-trips, p.Statements()-stmts
		if trips != 1 || stmts != 4 {
			t.Errorf("read-modify-write %d of a key written before: %d round trips, %d statements; want 1 and 4 (BEGIN, guard, write, COMMIT)", i, trips, stmts)
		}
	}
	if got := getNumber(t, b, k); got != "5" {
		t.Fatalf("after five increments: %s", got)
	}
	// Another store changes the key: the guess misses, the Txn reruns.
	if err := b.Txn(ctx, add(k, 100)); err != nil {
		t.Fatal(err)
	}
	if err := a.Txn(ctx, add(k, 1)); err != nil {
		t.Fatal(err)
	}
	if got := getNumber(t, b, k); got != "106" {
		t.Errorf("after another store's change and a guessed increment: %s, want 106", got)
	}
	// A key guessed absent (a's Txn deleted it), created by b: fn's
	// error on the guess must not be the answer.
	gone := []byte("gone")
	errAbsent := errors.New("absent")
	if err := a.Txn(ctx, func(tx kv.Tx) error { tx.Delete(gone); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Txn(ctx, func(tx kv.Tx) error { tx.Set(gone, []byte{}); return nil }); err != nil {
		t.Fatal(err)
	}
	err := a.Txn(ctx, func(tx kv.Tx) error {
		v, err := tx.Get(gone)
		if err != nil {
			return err
		}
		if v == nil {
			return errAbsent
		}
		if len(v) != 0 {
			t.Errorf("present and empty: read %q", v)
		}
		return nil
	})
	if err != nil {
		t.Errorf("Txn on a key another store created: %v, want it seen present", err)
	}
	// And the other way: guessed present and empty, deleted by b.
	err = a.Txn(ctx, func(tx kv.Tx) error {
		if v, err := tx.Get(gone); err != nil || v == nil || len(v) != 0 {
			t.Errorf("guessed present and empty: %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Txn(ctx, func(tx kv.Tx) error { tx.Delete(gone); return nil }); err != nil {
		t.Fatal(err)
	}
	err = a.Txn(ctx, func(tx kv.Tx) error {
		v, err := tx.Get(gone)
		if err != nil {
			return err
		}
		if v != nil {
			return errors.New("present")
		}
		tx.Set(k, []byte("0"))
		return nil
	})
	if err != nil {
		t.Errorf("Txn on a key another store deleted: %v, want it seen absent", err)
	}
}

// TestPostgresGuessThenRead: a Txn that guesses a read and then reads a
// key it cannot guess sends the guard ahead of that read; when the guess
// was wrong the whole Txn runs again, so fn never acts on a mix of a
// stale guess and a real read.
func TestPostgresGuessThenRead(t *testing.T) {
	a, b, _ := guessPair(t)
	ctx := context.Background()
	x, y := []byte("x"), []byte("y")
	// Invariant kept by every Txn: x == y.
	both := func(n int) func(kv.Tx) error {
		return func(tx kv.Tx) error {
			vx, err := tx.Get(x)
			if err != nil {
				return err
			}
			vy, err := tx.Get(y)
			if err != nil {
				return err
			}
			if string(vx) != string(vy) {
				return errors.New("x and y differ: " + string(vx) + " " + string(vy))
			}
			tx.Set(x, []byte(strconv.Itoa(n)))
			tx.Set(y, []byte(strconv.Itoa(n)))
			return nil
		}
	}
	if err := a.Txn(ctx, both(1)); err != nil {
		t.Fatal(err)
	}
	// a now guesses x and y; b changes both; a's next Txn must not see
	// its guess of x with b's y (y is forgotten first, so it is read).
	a.(*Store).guesses.forget(map[string][]byte{string(y): []byte("1")})
	if err := b.Txn(ctx, both(2)); err != nil {
		t.Fatal(err)
	}
	if err := a.Txn(ctx, both(3)); err != nil {
		t.Errorf("Txn mixing a stale guess and a real read: %v", err)
	}
	if got := getNumber(t, b, y); got != "3" {
		t.Errorf("y = %s, want 3", got)
	}
}

// TestPostgresGuessHoldoff: a key another store keeps changing misses
// once, and is then read, not guessed, for guessHoldoff: each later Txn
// costs the two round trips of one without guesses (BEGIN and the read,
// then the write and COMMIT), not the eight of a miss (the failed guard,
// the ROLLBACK, pgx's deallocating and preparing again the statements of
// the failed batch, and those two).
func TestPostgresGuessHoldoff(t *testing.T) {
	a, b, p := guessPair(t)
	ctx := context.Background()
	k := []byte("contended")
	for range 2 {
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
	}
	var trips []int64
	for range 5 {
		if err := b.Txn(ctx, add(k, 10)); err != nil {
			t.Fatal(err)
		}
		before := p.RoundTrips()
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, p.RoundTrips()-before)
	}
	for i, n := range trips[1:] {
		if n != 2 {
			t.Errorf("Txn %d after the miss, the key changed by another store again: %d round trips, want 2 (all: %v)", i+1, n, trips)
		}
	}
	if got := getNumber(t, b, k); got != "57" {
		t.Errorf("after 7 increments by one and 5 by ten: %s", got)
	}
}

// TestPostgresGuessKeptAfterOwnRace: a Txn whose guess of a key misses
// because another Txn of the same store changed the key meanwhile (a
// compaction racing a file's appends) does not hold the key off: the
// store noted the newer value, and the next Txns guess it (one round
// trip, not the two of a real read).
func TestPostgresGuessKeptAfterOwnRace(t *testing.T) {
	a, _, p := guessPair(t)
	ctx := context.Background()
	k := []byte("raced")
	for range 2 {
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
	}
	inside, raced := make(chan struct{}), make(chan struct{})
	attempts := 0
	done := make(chan error, 1)
	go func() {
		done <- a.Txn(ctx, func(tx kv.Tx) error {
			attempts++
			v, err := tx.Get(k)
			if err != nil {
				return err
			}
			if attempts == 1 {
				close(inside)
				<-raced
			}
			x, _ := strconv.Atoi(string(v))
			tx.Set(k, []byte(strconv.Itoa(x+100)))
			return nil
		})
	}()
	<-inside
	if err := a.Txn(ctx, add(k, 10)); err != nil {
		t.Fatal(err)
	}
	close(raced)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Errorf("the raced Txn ran %d times, want 2 (its guess missed once)", attempts)
	}
	var trips []int64
	for range 4 {
		before := p.RoundTrips()
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
		trips = append(trips, p.RoundTrips()-before)
	}
	// The first may pay pgx's preparing again of the statements the
	// missed batch dropped on its connection.
	for i, n := range trips[1:] {
		if n != 1 {
			t.Errorf("Txn %d after a miss that the store's own commit made: %d round trips, want 1, guessed (all: %v)", i+2, n, trips)
		}
	}
	if got := getNumber(t, a, k); got != "116" {
		t.Errorf("k = %s, want 116", got)
	}
}

// TestPostgresGuessesOnlyNamedKeys: once kvmeta named the keys worth
// keeping (kv.CacheKeys), a read-modify-write of any other key reads it
// for real (two round trips), while one of a named key is guessed (one).
func TestPostgresGuessesOnlyNamedKeys(t *testing.T) {
	a, _, p := guessPair(t)
	kv.CacheKeys(a, []byte("A"))
	ctx := context.Background()
	for _, c := range []struct {
		key   string
		trips int64
	}{{"Aattr", 1}, {"Cchunk", 2}} {
		k := []byte(c.key)
		for range 2 { // the second prepares the guard on the connection
			if err := a.Txn(ctx, add(k, 1)); err != nil {
				t.Fatal(err)
			}
		}
		trips := p.RoundTrips()
		if err := a.Txn(ctx, add(k, 1)); err != nil {
			t.Fatal(err)
		}
		if got := p.RoundTrips() - trips; got != c.trips {
			t.Errorf("read-modify-write of %s: %d round trips, want %d", c.key, got, c.trips)
		}
	}
}

// TestPostgresGuessAbsent: a key under a prefix named almost always
// absent (kv.AbsentGuesser: kvmeta's slice reference counts), never read
// nor written by the store, is guessed absent: a Txn that reads two such
// keys and writes is one round trip (BEGIN, guard, write, COMMIT). When
// one is present after all (another store wrote it), the guess misses and
// the Txn runs again on the real values.
func TestPostgresGuessAbsent(t *testing.T) {
	a, b, p := guessPair(t)
	ctx := context.Background()
	kv.GuessAbsent(a, []byte("K"))
	seen := func(keys ...[]byte) func(kv.Tx) error {
		return func(tx kv.Tx) error {
			vals, err := kv.GetMany(tx, keys)
			if err != nil {
				return err
			}
			n := 0
			for _, v := range vals {
				if v != nil {
					n++
				}
			}
			tx.Set([]byte("seen"), []byte(strconv.Itoa(n)))
			return nil
		}
	}
	for i := range 3 { // the first prepares the guard on the connection
		trips := p.RoundTrips()
		k1, k2 := []byte("K"+strconv.Itoa(2*i)), []byte("K"+strconv.Itoa(2*i+1))
		if err := a.Txn(ctx, seen(k1, k2)); err != nil {
			t.Fatal(err)
		}
		if trips = p.RoundTrips() - trips; i > 0 && trips != 1 {
			t.Errorf("Txn %d reading two keys guessed absent: %d round trips, want 1", i, trips)
		}
	}
	if got := getNumber(t, b, []byte("seen")); got != "0" {
		t.Fatalf("keys seen present: %s, want 0", got)
	}
	if err := b.Txn(ctx, func(tx kv.Tx) error { tx.Set([]byte("K9"), []byte("2")); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := a.Txn(ctx, seen([]byte("K8"), []byte("K9"))); err != nil {
		t.Fatal(err)
	}
	if got := getNumber(t, b, []byte("seen")); got != "1" {
		t.Errorf("a key another store wrote, guessed absent: seen %s present, want 1", got)
	}
}

// TestGuessHoldoffAndOwnCommits: the holdoff rules of guesses (guess.go),
// in the orders that a race between two transactions of one store can
// give. A miss whose guess the store has replaced meanwhile holds
// nothing off; a miss of the current guess holds the key off, and then
// only the writes of a transaction that began before the miss (whose
// commit the miss may have met) are noted, not later ones, nor reads.
func TestGuessHoldoffAndOwnCommits(t *testing.T) {
	k := "k"
	guess := func(g *guesses) string {
		t.Helper()
		v, ok := g.get([]byte(k))
		if !ok {
			return "(none)"
		}
		return string(v)
	}
	wrote := func(v string) (map[string][]byte, map[string]pendingWrite) {
		return map[string][]byte{k: []byte(v)}, map[string]pendingWrite{k: {value: []byte(v)}}
	}

	// The store's own commit noted v2 before the miss of a guess of v1.
	g := newGuesses()
	g.note(map[string][]byte{k: []byte("v1")}, nil, time.Time{})
	vals, own := wrote("v2")
	g.note(vals, own, time.Now())
	g.forget(map[string][]byte{k: []byte("v1")})
	if got := guess(g); got != "v2" {
		t.Errorf("miss of a replaced guess: guess %s, want v2", got)
	}

	// The commit began before the miss and is noted after it.
	g = newGuesses()
	g.note(map[string][]byte{k: []byte("v1")}, nil, time.Time{})
	began := time.Now()
	time.Sleep(time.Millisecond)
	g.forget(map[string][]byte{k: []byte("v1")})
	if got := guess(g); got != "(none)" {
		t.Errorf("after a miss of the current guess: guess %s, want none", got)
	}
	g.note(map[string][]byte{k: []byte("read")}, nil, time.Time{})
	if got := guess(g); got != "(none)" {
		t.Errorf("a read noted during the holdoff: guess %s, want none", got)
	}
	later := time.Now()
	vals, own = wrote("v3")
	g.note(vals, own, later)
	if got := guess(g); got != "(none)" {
		t.Errorf("the writes of a transaction begun after the miss: guess %s, want none (held off)", got)
	}
	vals, own = wrote("v2")
	g.note(vals, own, began)
	if got := guess(g); got != "v2" {
		t.Errorf("the writes of a transaction begun before the miss: guess %s, want v2", got)
	}
}
