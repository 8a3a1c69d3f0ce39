package rediskv

import (
	"bytes"
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The client-side cache (kv.Cacher; the package doc's "Cache" section
// says why it is correct). Redis tells one connection of this client,
// subscribed to invalidateChannel, the name of every key under the cached
// prefixes that anyone modifies (CLIENT TRACKING in broadcast mode). The
// cache holds values read from Redis; an invalidation deletes its key.
//
// A PING on that connection is answered after every invalidation Redis
// queued for it before running the PING. Broadcast invalidations are
// queued once per event-loop turn, after the turn's commands, so the PING
// answered first may still precede the invalidation of a change made in
// the same turn; a PING sent after that answer runs in a later turn.
// Pings go one at a time, each sent after the answer to the one before.
// So when the answer to ping k arrives, every change Redis made before it
// ran ping k-1, which was after ping k-1 was sent, has been invalidated
// here: every value inserted before that send and still held is current
// as of that instant, valid. An entry is served only if it was inserted
// before valid, and only while valid is younger than staleMax.
//
// A value read from Redis is inserted only if no invalidation of its key
// was processed between sending the read and inserting it (the slot
// counters): otherwise the read may predate a change whose invalidation is
// already spent. Any reset (a new connection, a lost or unexpected
// message, a flush of the database) empties the cache and starts valid
// over. A full cache drops an eighth of its values, chosen at random (map
// iteration order), to make room: eviction only forgets, and a key
// evicted is read from Redis again and inserted under the same guard.
//
// This client's own commits: after one, the old values of the keys it
// wrote are dropped at once (this mount reads its own writes), and when
// their invalidations come back the keys are read again, so that what this
// mount just wrote is served from the cache a moment later (a stat of
// every file just created).
//
// They are read, not taken from the commit, although the commit knows
// them: Redis gathers broadcast invalidations by key over a whole
// event-loop turn and names each key once (TestInvalidationsOfATurnCoalesce),
// so the invalidation that answers this commit's write of a key may also
// stand for another client's write of it later in the same turn. A value
// inserted when "its" invalidation arrived would then hide that write
// until the key changed again; counting invalidations cannot tell the two
// cases apart. The read back is a read like any other, under the slot
// guard, sent once the invalidation came back: a change after it is
// invalidated after the guard was taken. It costs no FUSE request a round
// trip (refetchLoop batches it off the request path).
type tracker struct {
	s        *Store
	prefixes atomic.Pointer[[]string] // Redis key prefixes tracked; nil: off
	start    sync.Once
	started  atomic.Bool // run ran: close has things to stop
	running  atomic.Bool // tracking may serve and fill
	off      atomic.Bool // Redis refused tracking: never retried
	ctx      context.Context
	cancel   context.CancelFunc
	client   redis.UniversalClient
	ps       *redis.PubSub
	wg       sync.WaitGroup
	pongs    chan string
	kick     chan struct{} // a reset: the awaited pong counts for nothing
	refetch  chan []string
	hashSeed maphash.Seed
	global   atomic.Uint64 // bumped by every invalidation and reset
	slots    [trackSlots]atomic.Uint64
	served   atomic.Int64 // answers from the cache, for tests

	mu        sync.Mutex
	m         map[string]trackedValue
	own       map[string]ownWrite     // keys this client is writing or wrote
	valid     time.Time               // see above; zero: nothing is served
	prevSent  time.Time               // when the ping last answered was sent; zero after a reset
	pingSeq   uint64                  // the ping awaited
	pingSent  time.Time               // when it was sent
	fresh     map[string]*freshRecord // fresh prefixes (fresh.go), by Redis prefix
	freshKeys int                     // keys in their unknown sets
	freshUse  uint64                  // counts uses of fresh records (freshRecord.used)
}

// ownWrite is a key this client is committing: it is read again once
// both the commit returned (its old value dropped) and Redis's
// invalidation of it came back, whichever is last.
type ownWrite struct {
	at        time.Time // when the commit was about to be sent
	committed bool
	pushed    bool
}

// trackedValue is one cached value.
type trackedValue struct {
	value   []byte // never modified once stored
	present bool
	at      time.Time // when it was inserted
}

const (
	invalidateChannel = "__redis__:invalidate"
	trackSlots        = 1024
	// ownMax bounds the keys of writes awaiting their read-back: those of
	// commits in flight, and of commits that failed (never invalidated),
	// swept once older than ownAge when the bound is reached.
	ownMax    = 1 << 16
	pingEvery = 20 * time.Millisecond
	// staleMax bounds how long before an answer from the cache the value
	// was known current.
	staleMax = 100 * time.Millisecond
	pongWait = time.Second
	ownAge   = 2 * time.Second
	// refetchMax bounds the keys of one refetch read, refetchWait is how
	// long the refetch loop gathers keys before it reads.
	refetchMax  = 512
	refetchWait = 10 * time.Millisecond
)

// trackMax bounds the values held: a 100,000-entry directory's
// entries and attributes (two values per entry) fit, stat of every
// entry after a listing is answered here. Past it, an eighth goes.
var trackMax = 1 << 18 // a variable for tests

// testHookFill, if set, runs before each fill (tests delay fills with it,
// as a slow reader would).
var testHookFill func()

// guard is the state of the invalidation counters before a read was
// sent: what the read returns may be inserted only if none of its keys'
// slots (or, for a key whose name the read learns, no slot at all) saw an
// invalidation since.
type guard struct {
	global uint64
	slots  []uint64
}

func (tr *tracker) slot(rk string) int {
	return int(maphash.String(tr.hashSeed, rk) % trackSlots)
}

// tracks says whether rk is under a cached prefix.
func (tr *tracker) tracks(rk string) bool { return underAny(tr.prefixes.Load(), rk) }

// ensure starts tracking, once, if keys were named and the store can.
func (tr *tracker) ensure() bool {
	if tr.running.Load() {
		return true
	}
	if tr.prefixes.Load() == nil || tr.s.cluster || tr.s.noCache || tr.off.Load() || tr.s.closed.Load() {
		return false
	}
	tr.start.Do(tr.run)
	return tr.running.Load()
}

// run starts the tracking connection and its goroutines.
func (tr *tracker) run() {
	tr.hashSeed = maphash.MakeSeed()
	tr.ctx, tr.cancel = context.WithCancel(context.Background())
	tr.pongs = make(chan string, 1)
	tr.kick = make(chan struct{}, 1)
	tr.refetch = make(chan []string, 1024)
	opts := tr.s.bulk.opts
	opts.Protocol = 2 // invalidations as Pub/Sub messages, in order with the pongs
	opts.OnConnect = tr.onConnect
	opts.IsClusterMode = false
	tr.client = redis.NewUniversalClient(&opts)
	tr.started.Store(true)
	tr.running.Store(true)
	tr.ps = tr.client.Subscribe(tr.ctx, invalidateChannel)
	tr.wg.Add(3)
	go tr.receive()
	go tr.ping()
	go tr.refetchLoop()
}

// onConnect turns broadcast tracking on for a new connection, with its
// invalidations sent to itself.
func (tr *tracker) onConnect(ctx context.Context, cn *redis.Conn) error {
	tr.reset()
	id, err := cn.ClientID(ctx).Result()
	if err == nil {
		args := []any{"CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST"}
		for _, p := range *tr.prefixes.Load() {
			args = append(args, "PREFIX", p)
		}
		err = cn.Do(ctx, args...).Err()
	}
	var rerr redis.Error
	if err != nil && errors.As(err, &rerr) && !tr.off.Swap(true) {
		// Refused, not unreachable: no use asking again.
		tr.running.Store(false)
		slog.Warn("redis: client-side cache off: the server refused CLIENT TRACKING (Redis 6 or later, and the permission to run CLIENT, are needed); every read goes to the server", "store", tr.s.name, "err", err)
		tr.cancel()
	}
	return err
}

// receive processes the tracking connection's messages in order.
func (tr *tracker) receive() {
	defer tr.wg.Done()
	for tr.ctx.Err() == nil {
		msg, err := tr.ps.ReceiveTimeout(tr.ctx, 2*pongWait)
		if err != nil {
			tr.reset()
			if tr.ctx.Err() == nil {
				slog.Debug("redis: tracking connection", "store", tr.s.name, "err", err)
				sleepCtx(tr.ctx, 100*time.Millisecond)
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			tr.reset() // messages before the subscription were dropped
		case *redis.Message:
			keys := m.PayloadSlice
			if keys == nil && m.Payload != "" {
				keys = []string{m.Payload}
			}
			if m.Channel != invalidateChannel || len(keys) == 0 {
				tr.reset()
				continue
			}
			tr.invalidate(keys)
		case *redis.Pong:
			tr.pong(m.Payload)
		default:
			tr.reset()
		}
	}
}

// ping sends one ping at a time, each after the answer to the one before
// (or a reset if none comes within pongWait).
func (tr *tracker) ping() {
	defer tr.wg.Done()
	var seq uint64
	for tr.ctx.Err() == nil {
		seq++
		tr.mu.Lock()
		tr.pingSeq, tr.pingSent = seq, time.Now()
		tr.mu.Unlock()
		if err := tr.ps.Ping(tr.ctx, strconv.FormatUint(seq, 10)); err != nil {
			tr.reset()
			sleepCtx(tr.ctx, 100*time.Millisecond)
			continue
		}
		select {
		case <-tr.pongs:
		case <-tr.kick:
		case <-time.After(pongWait):
			tr.reset()
		case <-tr.ctx.Done():
			return
		}
		sleepCtx(tr.ctx, pingEvery)
	}
}

// pong records the answer to a ping.
func (tr *tracker) pong(payload string) {
	tr.mu.Lock()
	if payload != strconv.FormatUint(tr.pingSeq, 10) {
		tr.mu.Unlock()
		return // from before a reset
	}
	if !tr.prevSent.IsZero() {
		tr.valid = tr.prevSent
	}
	tr.prevSent = tr.pingSent
	tr.pingSeq = 0
	tr.mu.Unlock()
	select {
	case tr.pongs <- payload:
	default:
	}
}

// reset forgets everything: nothing is served until two pings are
// answered, and no read sent before is inserted.
func (tr *tracker) reset() {
	tr.global.Add(1)
	for i := range tr.slots {
		tr.slots[i].Add(1)
	}
	tr.mu.Lock()
	tr.m, tr.own = nil, nil
	tr.fresh, tr.freshKeys = nil, 0
	tr.valid, tr.prevSent = time.Time{}, time.Time{}
	tr.pingSeq = 0 // an answer still on its way counts for nothing
	tr.mu.Unlock()
	select {
	case tr.kick <- struct{}{}:
	default:
	}
}

// invalidate deletes keys someone modified, and queues the refetch of
// those this client wrote.
func (tr *tracker) invalidate(keys []string) {
	tr.global.Add(1)
	for _, k := range keys {
		tr.slots[tr.slot(k)].Add(1)
	}
	var again []string
	now := time.Now()
	tr.mu.Lock()
	tr.freshChanged(keys)
	for _, k := range keys {
		delete(tr.m, k)
		if o, ok := tr.own[k]; ok {
			switch {
			case now.Sub(o.at) >= ownAge:
				delete(tr.own, k)
			case o.committed:
				delete(tr.own, k)
				again = append(again, k)
			default:
				o.pushed = true
				tr.own[k] = o
			}
		}
	}
	tr.mu.Unlock()
	tr.queue(again)
}

// queue hands keys to the refetch loop.
func (tr *tracker) queue(keys []string) {
	if len(keys) == 0 {
		return
	}
	select {
	case tr.refetch <- keys:
	default: // behind: these keys are read when asked for
	}
}

// refetchLoop reads again the keys this client wrote, once their
// invalidations came back, in batches: it gathers for refetchWait first,
// so that a burst of commits (a create loop, each changing its
// directory) costs one read of each key, not one read per commit.
func (tr *tracker) refetchLoop() {
	defer tr.wg.Done()
	for {
		var first []string
		select {
		case first = <-tr.refetch:
		case <-tr.ctx.Done():
			return
		}
		sleepCtx(tr.ctx, refetchWait)
		seen := map[string]bool{}
		var keys []string
		add := func(ks []string) {
			for _, k := range ks {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
		add(first)
	more:
		for len(keys) < refetchMax {
			select {
			case k := <-tr.refetch:
				add(k)
			default:
				break more
			}
		}
		g := tr.guard(keys)
		res, err := tr.s.client.MGet(tr.ctx, keys...).Result()
		if err != nil || len(res) != len(keys) {
			continue
		}
		vals, present := make([][]byte, len(keys)), make([]bool, len(keys))
		for i, r := range res {
			if s, ok := r.(string); ok {
				vals[i], present[i] = []byte(s), true
			}
		}
		tr.fill(keys, vals, present, g)
	}
}

// guard returns the counters of rkeys' slots, before a read of them.
func (tr *tracker) guard(rkeys []string) guard {
	if !tr.running.Load() {
		return guard{}
	}
	g := guard{global: tr.global.Load(), slots: make([]uint64, len(rkeys))}
	for i, rk := range rkeys {
		g.slots[i] = tr.slots[tr.slot(rk)].Load()
	}
	return g
}

// fill inserts values read from Redis (nil where absent): those of
// rkeys[i] for i < len(g.slots) if their slot saw no invalidation since
// g, the others (keys the read named) if none at all did.
func (tr *tracker) fill(rkeys []string, vals [][]byte, present []bool, g guard) {
	if !tr.running.Load() || g.slots == nil {
		return
	}
	if testHookFill != nil {
		testHookFill()
	}
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.m == nil {
		tr.m = make(map[string]trackedValue, len(rkeys))
	}
	if over := len(tr.m) + len(rkeys) - trackMax; over > 0 {
		tr.evict(max(over, trackMax/8))
	}
	for i, rk := range rkeys {
		if !tr.tracks(rk) {
			continue
		}
		ok := tr.global.Load() == g.global
		if i < len(g.slots) {
			ok = tr.slots[tr.slot(rk)].Load() == g.slots[i]
		}
		if !ok {
			delete(tr.m, rk)
			continue
		}
		if e, ok := tr.m[rk]; ok && e.present == present[i] && bytes.Equal(e.value, vals[i]) {
			continue // the same, and held since e.at: no younger for being read again
		}
		tr.m[rk] = trackedValue{value: vals[i], present: present[i], at: now}
	}
}

// evict forgets n values (all if n is more), those map iteration meets
// first: a random choice. The caller holds tr.mu.
func (tr *tracker) evict(n int) {
	for rk := range tr.m {
		if n <= 0 {
			return
		}
		delete(tr.m, rk)
		n--
	}
}

// drop forgets rkeys: read afresh by a path that does not fill, whose
// answer is newer than what the cache holds.
func (tr *tracker) drop(rkeys []string) {
	if !tr.running.Load() {
		return
	}
	tr.mu.Lock()
	for _, rk := range rkeys {
		delete(tr.m, rk)
	}
	tr.mu.Unlock()
}

// writing is told the keys a commit is about to write: they are read
// again once the commit returned and their invalidations came back.
func (tr *tracker) writing(rkeys []string) {
	if !tr.running.Load() {
		return
	}
	now := time.Now()
	tr.mu.Lock()
	if tr.own == nil {
		tr.own = map[string]ownWrite{}
	}
	tr.freshChanged(rkeys)
	if len(tr.own)+len(rkeys) > ownMax {
		for rk, o := range tr.own {
			if now.Sub(o.at) >= ownAge {
				delete(tr.own, rk) // a commit that failed: no invalidation comes
			}
		}
	}
	for _, rk := range rkeys {
		if tr.tracks(rk) && len(tr.own) < ownMax {
			tr.own[rk] = ownWrite{at: now}
		}
	}
	tr.mu.Unlock()
}

// wrote is told the keys of a commit that ran, or may have: their old
// values are dropped (this client must read its own writes), and those
// whose invalidation came back already are read again.
//
// A read that raced with the commit and fills the old value after this
// drop is not served before the commit's invalidation deletes it: the
// commit ran before the fill, so before the ping that would make the fill
// servable.
func (tr *tracker) wrote(rkeys []string) {
	if !tr.running.Load() {
		return
	}
	var again []string
	tr.mu.Lock()
	tr.freshChanged(rkeys)
	for _, rk := range rkeys {
		delete(tr.m, rk)
		if o, ok := tr.own[rk]; ok {
			if o.pushed {
				delete(tr.own, rk)
				again = append(again, rk)
			} else {
				o.committed = true
				tr.own[rk] = o
			}
		}
	}
	tr.mu.Unlock()
	tr.queue(again)
}

// get returns the cached values of all of rkeys, and the instant they
// were current, if every one may be served. If named is not nil, the key
// it names from those values ("" none, or one of rkeys) is served with
// them, under the same lock, so that all are as of one instant.
func (tr *tracker) get(rkeys []string, named func([]trackedValue) string) ([]string, []trackedValue, time.Time, bool) {
	if !tr.running.Load() {
		return nil, nil, time.Time{}, false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	v := tr.valid
	if v.IsZero() || time.Since(v) > staleMax {
		return nil, nil, time.Time{}, false
	}
	out := make([]trackedValue, len(rkeys), len(rkeys)+1)
	for i, rk := range rkeys {
		e, ok := tr.m[rk]
		if !ok || !e.at.Before(v) {
			return nil, nil, time.Time{}, false
		}
		out[i] = e
	}
	if named != nil {
		if rk := named(out); rk != "" && !slices.Contains(rkeys, rk) {
			e, ok := tr.m[rk]
			if !ok || !e.at.Before(v) {
				return nil, nil, time.Time{}, false
			}
			rkeys, out = append(rkeys[:len(rkeys):len(rkeys)], rk), append(out, e)
		}
	}
	return rkeys, out, v, true
}

// seed returns rk's cached value as a seed for a write transaction
// (seeds.go), whether or not it may be served to a reader: the commit
// compares it anyway, and a value Redis did not invalidate is most likely
// current. A key not held but under a fresh prefix whose commit returned,
// and unchanged since (fresh.go), is seeded absent.
func (tr *tracker) seed(rk string) (seed, bool) {
	if !tr.running.Load() {
		return seed{}, false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	e, ok := tr.m[rk]
	if !ok {
		if _, fresh := tr.freshAbsent(rk); fresh {
			return seed{at: time.Now()}, true
		}
	}
	return seed{value: e.value, present: e.present, at: e.at}, ok
}

// close stops tracking.
func (tr *tracker) close() error {
	if !tr.started.Load() {
		return nil
	}
	tr.running.Store(false)
	tr.cancel()
	err := tr.ps.Close()
	tr.wg.Wait()
	return errors.Join(err, tr.client.Close())
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
