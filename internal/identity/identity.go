package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"shoal/internal/meta"
	"shoal/internal/object"
)

// Prefix is where claims live in a bucket.
const Prefix = "volumes/"

const suffix = ".json"

// How a claim came to be (Claim.How).
const (
	HowFormat  = "format"         // shoal format
	HowMount   = "mount"          // the first open of a volume older than claims
	HowLoad    = "load"           // shoal load: a copy of Origin
	HowReplace = "load --replace" // shoal load --replace: took Origin's place
	HowAdd     = "claims --add"   // shoal claims --add
	HowSource  = "load (source)"  // written by a load for its unclaimed source
	HowRestore = "backup restore" // shoal restore: a volume made from a backup of Origin
)

// Errors of Check and Exclusive, wrapped in a message that lists the
// claimants and says what to do.
var (
	// ErrNotClaimant: the bucket is claimed, but not by this volume.
	ErrNotClaimant = errors.New("the bucket belongs to another volume")
	// ErrShared: the bucket has more than one claimant, so no volume may
	// delete objects from it.
	ErrShared = errors.New("the bucket is shared with another volume")
)

// Claim is one volume's record in a bucket.
type Claim struct {
	UUID    string    `json:"uuid"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`          // when the volume was formatted
	Claimed time.Time `json:"claimed"`          // when this claim was written
	How     string    `json:"how"`              // one of the How constants
	Origin  string    `json:"origin,omitempty"` // the volume a loaded one came from
}

// For returns the claim of the volume f.
func For(f meta.Format, how string) Claim {
	return Claim{UUID: f.UUID, Name: f.Name, Created: f.Created, Claimed: time.Now().UTC(), How: how}
}

// Key returns the object key of volume uuid's claim.
func Key(uuid string) string { return Prefix + uuid + suffix }

// String describes the claim in one line, for messages.
func (c Claim) String() string {
	s := fmt.Sprintf("%q (uuid %s, claimed %s by %s", c.Name, c.UUID, c.Claimed.Format(time.RFC3339), c.How)
	if c.Origin != "" {
		s += " from " + c.Origin
	}
	return s + ")"
}

// List returns the claims in store, oldest first. A claim object that does
// not parse still counts, named by its key: it claims the bucket all the
// same.
func List(ctx context.Context, store object.Store) ([]Claim, error) {
	var infos []object.Info
	err := object.Walk(ctx, store, Prefix, func(page []object.Info) { infos = append(infos, page...) })
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	var out []Claim
	for _, info := range infos {
		uuid, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, Prefix), suffix)
		if !ok || strings.Contains(uuid, "/") {
			continue
		}
		c, err := read(ctx, store, info.Key)
		if errors.Is(err, object.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil || c.UUID != uuid {
			c = Claim{UUID: uuid, Name: "?", Claimed: info.ModTime, How: "unreadable claim"}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Claimed.Before(out[j].Claimed) })
	return out, nil
}

func read(ctx context.Context, store object.Store, key string) (Claim, error) {
	rc, err := store.Get(ctx, key, 0, -1)
	if err != nil {
		return Claim{}, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil {
		return Claim{}, err
	}
	var c Claim
	return c, json.Unmarshal(raw, &c)
}

// Put writes (or rewrites) c in store.
func Put(ctx context.Context, store object.Store, c Claim) error {
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	if err := store.Put(ctx, Key(c.UUID), bytes.NewReader(raw), int64(len(raw))); err != nil {
		return fmt.Errorf("identity: writing the claim of volume %s to %s: %w", c.UUID, store, err)
	}
	return nil
}

// Release removes volume uuid's claim from store; absent is fine.
func Release(ctx context.Context, store object.Store, uuid string) error {
	if err := store.Delete(ctx, Key(uuid)); err != nil {
		return fmt.Errorf("identity: releasing the claim of volume %s in %s: %w", uuid, store, err)
	}
	return nil
}

// Check is what opening volume f does: it returns the bucket's claims when
// f's own claim is among them, claims an unclaimed bucket for f (a volume
// formatted before claims existed), and refuses a bucket claimed only by
// other volumes with an error wrapping ErrNotClaimant.
func Check(ctx context.Context, store object.Store, f meta.Format) ([]Claim, error) {
	claims, err := List(ctx, store)
	if err != nil {
		return nil, err
	}
	if find(claims, f.UUID) {
		return claims, nil
	}
	if len(claims) == 0 {
		c := For(f, HowMount)
		return []Claim{c}, Put(ctx, store, c)
	}
	return claims, notClaimant(store, f, claims)
}

// Exclusive returns nil when f is the only volume that claims store's
// bucket (claiming an unclaimed bucket first, as Check does). Otherwise it
// returns an error wrapping ErrShared or ErrNotClaimant that lists the
// claimants and says how to resolve it. Call it before deleting objects.
func Exclusive(ctx context.Context, store object.Store, f meta.Format) error {
	claims, err := Check(ctx, store, f)
	if err != nil {
		return err
	}
	return Judge(store, f, claims)
}

// Judge is Exclusive over claims already listed, without writing: nil when
// there are none or f's is the only one, otherwise the error Exclusive
// returns.
func Judge(store object.Store, f meta.Format, claims []Claim) error {
	switch {
	case len(claims) == 0:
		return nil
	case !find(claims, f.UUID):
		return notClaimant(store, f, claims)
	case len(claims) > 1:
		return shared(store, f, claims)
	}
	return nil
}

func find(claims []Claim, uuid string) bool {
	for _, c := range claims {
		if c.UUID == uuid {
			return true
		}
	}
	return false
}

// describe lists claims for a message.
func describe(claims []Claim) string {
	parts := make([]string, len(claims))
	for i, c := range claims {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

func shared(store object.Store, f meta.Format, claims []Claim) error {
	return fmt.Errorf("%w: bucket %s is claimed by %d volumes: %s. "+
		"No volume deletes objects from a bucket it shares, since each may hold blocks the others still use "+
		"(a volume loaded from a dump of another is a copy that shares its blocks), so volume %q (uuid %s) deletes nothing there. "+
		"Once a volume sharing the bucket is gone for good (its engine deleted, or replaced by a load), release its claim with "+
		"'shoal claims --release UUID META-URL'; deletions resume when one claim is left",
		ErrShared, store, len(claims), describe(claims), f.Name, f.UUID)
}

func notClaimant(store object.Store, f meta.Format, claims []Claim) error {
	return fmt.Errorf("%w: bucket %s is claimed by %s, not by this volume %q (uuid %s). "+
		"Its claim was released (with 'shoal claims --release' or by 'shoal load --replace' of a dump of it), "+
		"or it was restored by an older binary; using the bucket could let one volume delete blocks the other still reads. "+
		"If this engine is retired, leave it. If it must use the bucket beside them, run 'shoal claims --add META-URL' "+
		"(then nothing is deleted from the bucket while it is shared)",
		ErrNotClaimant, store, describe(claims), f.Name, f.UUID)
}
