package rediskv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"shoal/internal/meta"
	"shoal/internal/meta/kv"
)

// openCached opens a store on url that caches keys starting with "A"
// and "D", as kvmeta asks for.
func openCached(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st := s.(*Store)
	st.CacheKeys([]byte("A"), []byte("D"))
	return st
}

// cachedGet reads key as a mount's getattr does, reporting whether the
// answer came from the cache and the instant it was current.
func cachedGet(t *testing.T, s *Store, key string) (string, time.Time, bool) {
	t.Helper()
	var c meta.Cached
	v, err := s.GetOne(meta.WithCached(context.Background(), &c), []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), c.At(), !c.At().IsZero()
}

// untilCached reads key until an answer comes from the cache.
func untilCached(t *testing.T, s *Store, key string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if v, _, ok := cachedGet(t, s, key); ok {
			return v
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was never answered from the client-side cache", key)
	return ""
}

func TestCacheAnswersAndReadsOwnWrites(t *testing.T) {
	s := openCached(t, redisNamespaceURL(t))
	setKey(t, s, "Akey", "v0")
	if v := untilCached(t, s, "Akey"); v != "v0" {
		t.Fatalf("cached %q, want v0", v)
	}
	// Without a cache flag, every read goes to Redis.
	before := s.track.served.Load()
	if _, err := s.GetOne(context.Background(), []byte("Akey")); err != nil {
		t.Fatal(err)
	}
	if s.track.served.Load() != before {
		t.Fatal("a read without meta.Cached was answered from the cache")
	}
	// This client's own write is read back at once, never the old value,
	// and is served from the cache again a moment later.
	for i := 1; i <= 30; i++ {
		want := "v" + strconv.Itoa(i)
		setKey(t, s, "Akey", want)
		if v, _, _ := cachedGet(t, s, "Akey"); v != want {
			t.Fatalf("read %q right after writing %q", v, want)
		}
		if v := untilCached(t, s, "Akey"); v != want {
			t.Fatalf("cached %q after writing %q", v, want)
		}
	}
	// Keys outside the cached prefixes are never served from it.
	setKey(t, s, "Ckey", "x")
	neverCached(t, s, "Ckey", "a key outside the cached prefixes")
}

// neverCached reads key for a while and fails if an answer comes from
// the cache.
func neverCached(t *testing.T, s *Store, key, what string) {
	t.Helper()
	for range 40 {
		if _, _, ok := cachedGet(t, s, key); ok {
			t.Fatalf("%s was answered from the cache", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheOffByURL(t *testing.T) {
	s := openCached(t, redisNamespaceURL(t)+"&cache=off")
	setKey(t, s, "Akey", "v0")
	neverCached(t, s, "Akey", "cache=off: a read")
}

// TestCacheAgainstAnotherClient checks every answer of a caching client
// against the history of another client's writes: an answer current at
// instant at must show every write that returned before at, and a
// client's answers for one key never go back (randomized; the writer and
// the readers run concurrently).
func TestCacheAgainstAnotherClient(t *testing.T) {
	url := redisNamespaceURL(t)
	reader := openCached(t, url)
	writer := openCached(t, url)
	const nkeys = 4
	key := func(i int) string { return "A" + strconv.Itoa(i) }
	entry := func(i int) string { return "D" + strconv.Itoa(i) }
	for i := range nkeys {
		setKey(t, writer, key(i), "0")
		setKey(t, writer, entry(i), key(i)[1:]) // names A<i>: followed below
	}
	type write struct {
		seq  int
		done time.Time
	}
	var mu sync.Mutex
	history := make([][]write, nkeys) // per key, in order
	type answer struct {
		key        int
		seq        int
		at         time.Time // the instant the answer was current
		start, end time.Time
		cached     bool
	}
	var answers []answer
	// Some fills come late, as from a slow reader: a change may then be
	// invalidated between a read and its fill.
	var hookMu sync.Mutex
	hookRng := rand.New(rand.NewPCG(5, 6))
	testHookFill = func() {
		hookMu.Lock()
		d := time.Duration(0)
		if hookRng.IntN(4) == 0 {
			d = time.Duration(hookRng.IntN(40)) * time.Millisecond
		}
		hookMu.Unlock()
		time.Sleep(d)
	}
	defer func() { testHookFill = nil }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		seqs := make([]int, nkeys)
		for {
			select {
			case <-stop:
				return
			default:
			}
			i := rng.IntN(nkeys)
			seqs[i]++
			setKey(t, writer, key(i), strconv.Itoa(seqs[i]))
			mu.Lock()
			history[i] = append(history[i], write{seqs[i], time.Now()})
			mu.Unlock()
			time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
		}
	}()
	for r := range 2 { // the readers
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(3, uint64(r)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := rng.IntN(nkeys)
				var c meta.Cached
				ctx := meta.WithCached(context.Background(), &c)
				start := time.Now()
				var v []byte
				var err error
				if rng.IntN(2) == 0 {
					v, err = reader.GetOne(ctx, []byte(key(i)))
				} else { // a lookup's View: the entry, and the key it names
					err = reader.View(ctx, func(tx kv.Tx) error {
						f := kv.Follow{From: []byte(entry(i)), Prefix: []byte("A"), Off: 0, Len: len(key(i)) - 1}
						if err := kv.PrefetchFollow(tx, f); err != nil {
							return err
						}
						v, err = tx.Get([]byte(key(i)))
						return err
					})
				}
				end := time.Now()
				if err != nil {
					t.Error(err)
					return
				}
				seq, _ := strconv.Atoi(string(v))
				a := answer{key: i, seq: seq, at: c.At(), start: start, end: end, cached: !c.At().IsZero()}
				if !a.cached {
					a.at = start
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
			}
		}()
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	cached := 0
	for _, a := range answers {
		if a.cached {
			cached++
			if age := a.start.Sub(a.at); age > staleMax {
				t.Errorf("key %d: answer current %v before it was asked for (bound %v)", a.key, age, staleMax)
			}
		}
		min := 0
		for _, w := range history[a.key] {
			if w.done.Before(a.at) {
				min = w.seq
			}
		}
		if a.seq < min {
			t.Errorf("key %d: answer (cached %v) current at %v shows write %d, but write %d had returned before then", a.key, a.cached, a.at.Format("15:04:05.000000"), a.seq, min)
		}
	}
	for _, a := range answers {
		for _, b := range answers {
			if a.key == b.key && b.start.After(a.end) && b.seq < a.seq {
				t.Fatalf("key %d: an answer showed write %d after an earlier one had shown %d (cached %v then %v)", a.key, b.seq, a.seq, a.cached, b.cached)
			}
		}
	}
	if cached < len(answers)/10 {
		t.Fatalf("only %d of %d answers came from the cache", cached, len(answers))
	}
	t.Logf("%d answers, %d from the cache", len(answers), cached)
}

// TestCacheRefusedTracking: a user Redis does not let run CLIENT
// TRACKING gets every read from Redis, right, with one warning logged.
func TestCacheRefusedTracking(t *testing.T) {
	base := redisBase(t)
	u, err := url.Parse(redisNamespaceURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opts)
	defer admin.Close()
	user := fmt.Sprintf("notrack_%x", rand.Uint64())
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw-"+user, "~*", "&*", "+@all", "-client").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.Do(ctx, "ACL", "DELUSER", user)
	u.User = url.UserPassword(user, "pw-"+user)
	s := openCached(t, u.String())
	for i := range 30 {
		want := strconv.Itoa(i)
		setKey(t, s, "Akey", want)
		if v, _, ok := cachedGet(t, s, "Akey"); ok || v != want {
			t.Fatalf("read %q (from the cache: %v), want %q from Redis", v, ok, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !s.track.off.Load() {
		t.Fatal("the refusal of CLIENT TRACKING was not noticed")
	}
}

// A full cache makes room by forgetting some values, not all: reading
// past its bound keeps most of what it held, the newest value included,
// and what it keeps is served.
func TestCacheFullEvictsPart(t *testing.T) {
	old := trackMax
	t.Cleanup(func() { trackMax = old }) // after the store's own cleanup
	trackMax = 64
	s := openCached(t, redisNamespaceURL(t))
	tr := &s.track
	setKey(t, s, "Akey", "v")
	untilCached(t, s, "Akey") // tracking runs, its own write read back
	name := func(i int) string { return "Aabsent" + strconv.Itoa(i) }
	for i := 0; i < 10*trackMax; i++ {
		cachedGet(t, s, name(i)) // absent: read from Redis, inserted
		tr.mu.Lock()
		n := len(tr.m)
		_, last := tr.m[s.keys.value([]byte(name(i)))]
		tr.mu.Unlock()
		if n > trackMax || !last {
			t.Fatalf("after %d reads: %d values held (bound %d), newest held %v", i+1, n, trackMax, last)
		}
		if i >= trackMax && n < trackMax*7/8 {
			t.Fatalf("after %d reads: %d values held, want at least %d of %d", i+1, n, trackMax*7/8, trackMax)
		}
	}
	// Those held are served once a ping answered after their insertion.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _, ok := cachedGet(t, s, name(10*trackMax-1)); ok {
			if v != "" {
				t.Fatalf("absent key served %q", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the newest value was never served from the cache")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
