package rediskv

import (
	"github.com/redis/go-redis/v9"

	"shoal/internal/meta/kv"
)

var _ kv.MultiGetter = (*tx)(nil)

// GetMany implements kv.MultiGetter: the keys this transaction has not
// written are WATCHed and read with one MGET, in one round trip (a
// readdirplus page's attributes: a thousand GETs one after another
// before).
func (t *tx) GetMany(keys [][]byte) ([][]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	out := make([][]byte, len(keys))
	rkeys := make([]string, 0, len(keys))
	idx := make([]int, 0, len(keys))
	for i, k := range keys {
		if w, ok := t.writes[string(k)]; ok {
			if !w.deleted {
				out[i] = append([]byte{}, w.value...)
			}
			continue
		}
		rkeys = append(rkeys, t.s.keys.value(k))
		idx = append(idx, i)
	}
	if len(rkeys) == 0 {
		return out, nil
	}
	var mget *redis.SliceCmd
	if err := t.pipe(func(p redis.Pipeliner) {
		t.watchIn(p, rkeys...)
		mget = p.MGet(t.ctx, rkeys...)
	}); err != nil {
		return nil, t.fail(err)
	}
	vals, err := mget.Result()
	if err != nil {
		return nil, t.fail(err)
	}
	for j, v := range vals {
		if s, ok := v.(string); ok {
			out[idx[j]] = []byte(s)
		}
	}
	return out, nil
}
