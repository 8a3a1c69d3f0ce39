package journal

import (
	"encoding/binary"
	"maps"
	"slices"
	"sort"
)

// Replies: answering a resent request as it was answered.
//
// The kernel numbers every request of a connection (its unique id, never
// reused while the connection lives) and, when a successor asks it to
// resend what the dead server read but did not answer, sends those
// requests again with the same id and the resend bit set. A request that
// already happened — a mkdir committed, a handle opened, an O_APPEND
// write journaled and replayed — must not run again: the successor
// answers it with the reply recorded here, written before the reply went
// to the kernel. Opens record theirs in the open record (Handle.Request),
// O_APPEND writes in the write record (Append), every other such request
// in a reply record (Reply): one append each, and none for an open or an
// append beyond the record it already had.
//
// Intents: the moment between commit and record. A request that changes
// the volume commits in the engine before its reply can be recorded; a
// process that dies in between leaves a change no record tells of. So
// such a request first records its intent (Intent), with an inode number
// that tells its effect — the number of the inode it will create (which
// the engine hands out to no other create), the inode a rename moves — and
// its outcome after: the reply, or its failure (the adaptor encodes both
// in Reply's data). A successor that finds only the intent knows the
// request began and not whether it committed; the adaptor finds out from
// the volume (the new name holds the intent's inode) rather than running
// it blind a second time (package fusefs, committed.go).
//
// How long a reply is kept. The kernel resends only requests it has not
// had a reply to, and the server writes a reply microseconds after its
// record. So a record is needed only for that moment, and for as long as
// a successor has not yet answered a resend with it. The journal keeps
// the latest ReplyKeep replies (opens: as long as their handle is open):
// a reply still unwritten after ReplyKeep later requests were answered
// would need its goroutine stalled while others answered thousands, or
// ReplyKeep requests in flight at once, one per blocked thread. An
// intent is kept apart, until its request's outcome is recorded (a reply,
// or a create's open record): its request may run for seconds while the
// engine retries; at most IntentKeep are kept (only requests that never
// answer leave theirs). A new segment's checkpoint carries both, so the
// journal stays bounded (about 0.6 MiB of replies and, in the worst case,
// 1.6 MiB of intents), and Recover returns
// them (State.Replies); a successor carries them into its own journal,
// for its own successor in case it dies before answering the resends.

// ReplyKeep is how many of the latest replies a journal keeps (intents
// apart: IntentKeep).
const ReplyKeep = 4096

// Reply is how the mount answered a request, or that it began to.
type Reply struct {
	// Written is the byte count of an O_APPEND write (Append).
	Written uint64
	// Data is the serving adaptor's encoding of any other reply (Reply).
	Data []byte
	// Intent is set when only the request's intent was recorded
	// (Journal.Intent): it may or may not have committed. Ino is the
	// inode number the intent named (0: none).
	Intent bool
	Ino    uint64
}

// Reply records that request was answered with data (the adaptor's
// encoding of its reply; kept, not copied), before the reply is written.
func (j *Journal) Reply(request uint64, data []byte) error {
	return j.append(kindReply, replyPayload(request, Reply{Data: data}), nil)
}

// Intent records that request is about to change the volume, before it
// does; ino (0: none) is the inode that will tell its effect: the one it
// creates, or the one a rename moves. Its outcome settles it: a reply or
// failure (Reply), or a create's open record (Open with Handle.Request).
// A successor uses it to tell a request that committed from one that did
// not when the process died in between.
func (j *Journal) Intent(request, ino uint64) error {
	return j.append(kindIntent, u64s(request, ino), nil)
}

// replyPayload is a reply record: request, bytes written, data.
func replyPayload(request uint64, r Reply) []byte {
	b := u64s(request, r.Written)
	return append(b, r.Data...)
}

// replyRing keeps the latest ReplyKeep replies by request id (intents
// are apart: intentSet).
type replyRing struct {
	order []uint64 // request ids in the order added, a ring from next once full
	next  int
	byReq map[uint64]Reply
}

func (r *replyRing) add(request uint64, rep Reply) {
	if r.byReq == nil {
		r.byReq = map[uint64]Reply{}
	}
	if _, ok := r.byReq[request]; !ok {
		if len(r.order) < ReplyKeep {
			r.order = append(r.order, request)
		} else {
			delete(r.byReq, r.order[r.next])
			r.order[r.next] = request
			r.next = (r.next + 1) % ReplyKeep
		}
	}
	r.byReq[request] = rep
}

// each calls fn for every reply, oldest first.
func (r *replyRing) each(fn func(request uint64, rep Reply)) {
	for i := range r.order {
		req := r.order[(r.next+i)%len(r.order)]
		fn(req, r.byReq[req])
	}
}

// addReplies adds the replies and intents of a State, oldest (lowest
// request id: the kernel numbers requests in increasing order) first.
func (m *mirror) addReplies(replies map[uint64]Reply) {
	reqs := make([]uint64, 0, len(replies))
	for req := range replies {
		reqs = append(reqs, req)
	}
	sort.Slice(reqs, func(a, b int) bool { return reqs[a] < reqs[b] })
	for _, req := range reqs {
		if r := replies[req]; r.Intent {
			m.intents.add(req, r.Ino)
		} else {
			m.replies.add(req, r)
		}
	}
}

// allReplies is the replies and the unsettled intents, as State has them.
func (m *mirror) allReplies() map[uint64]Reply {
	all := make(map[uint64]Reply, len(m.replies.byReq)+len(m.intents.ino))
	for req, r := range m.replies.byReq {
		all[req] = r
	}
	for req, ino := range m.intents.ino {
		all[req] = Reply{Intent: true, Ino: ino}
	}
	return all
}

// applyReply applies a reply record: it also settles the request's
// intent.
func (m *mirror) applyReply(p []byte) {
	req := binary.LittleEndian.Uint64(p)
	m.replies.add(req, Reply{Written: binary.LittleEndian.Uint64(p[8:]), Data: p[16:]})
	m.intents.settle(req)
}

// IntentKeep bounds the intents a journal keeps without an outcome: only
// a request that never answers (its process died, and the kernel never
// resent it) leaves one for good, so the bound is never reached in use.
const IntentKeep = 1 << 16

// intentSet holds the intents whose request has no outcome recorded yet,
// apart from the replies: however many requests are answered while one
// runs (an engine call may retry for seconds), its intent stays. An
// outcome settles it: a reply record, or for a create its handle's open
// record. Request ids grow with every request of a connection, so the
// oldest intent is the one with the lowest id.
type intentSet struct {
	ino map[uint64]uint64 // request → the inode the intent named
}

func (s *intentSet) add(request, ino uint64) {
	if s.ino == nil {
		s.ino = map[uint64]uint64{}
	}
	s.ino[request] = ino
	if len(s.ino) > IntentKeep { // never in use: a scan is cheap enough
		delete(s.ino, slices.Min(slices.Collect(maps.Keys(s.ino))))
	}
}

func (s *intentSet) settle(request uint64) { delete(s.ino, request) }

// each calls fn for every unsettled intent, oldest first.
func (s *intentSet) each(fn func(request, ino uint64)) {
	for _, r := range slices.Sorted(maps.Keys(s.ino)) {
		fn(r, s.ino[r])
	}
}
