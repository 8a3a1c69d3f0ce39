package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object/memstore"
)

func format(uuid string) meta.Format {
	return meta.Format{Name: "vol-" + uuid, UUID: uuid, Created: time.Now().UTC()}
}

// TestCheck: an unclaimed bucket is claimed once by the first volume that
// opens it; that volume opens it again; another volume is refused with a
// message that names the owner and says what to do.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	a, b := format("aaaa"), format("bbbb")
	claims, err := identity.Check(ctx, s, a)
	if err != nil || len(claims) != 1 || claims[0].UUID != "aaaa" || claims[0].How != identity.HowMount {
		t.Fatalf("first open of an unclaimed bucket: %v, %+v", err, claims)
	}
	if _, err := s.Head(ctx, identity.Key("aaaa")); err != nil {
		t.Fatalf("claim not stored: %v", err)
	}
	if claims, err = identity.Check(ctx, s, a); err != nil || len(claims) != 1 {
		t.Fatalf("second open: %v, %+v", err, claims)
	}
	_, err = identity.Check(ctx, s, b)
	if !errors.Is(err, identity.ErrNotClaimant) {
		t.Fatalf("open by another volume: %v", err)
	}
	for _, want := range []string{"aaaa", "bbbb", "shoal claims --add"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not mention %q: %v", want, err)
		}
	}
	if _, err := s.Head(ctx, identity.Key("bbbb")); err == nil {
		t.Fatal("a refused volume claimed the bucket")
	}
}

// TestExclusive: deletes are allowed only to the sole claimant.
func TestExclusive(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	a, b := format("aaaa"), format("bbbb")
	if err := identity.Exclusive(ctx, s, a); err != nil {
		t.Fatalf("sole claimant: %v", err)
	}
	copyClaim := identity.For(b, identity.HowLoad)
	copyClaim.Origin = a.UUID
	if err := identity.Put(ctx, s, copyClaim); err != nil {
		t.Fatal(err)
	}
	for _, f := range []meta.Format{a, b} {
		err := identity.Exclusive(ctx, s, f)
		if !errors.Is(err, identity.ErrShared) || !strings.Contains(err.Error(), "from aaaa") {
			t.Errorf("%s on a shared bucket: %v", f.UUID, err)
		}
	}
	if err := identity.Release(ctx, s, a.UUID); err != nil {
		t.Fatal(err)
	}
	if err := identity.Exclusive(ctx, s, b); err != nil {
		t.Fatalf("the copy after the source's release: %v", err)
	}
	if err := identity.Exclusive(ctx, s, a); !errors.Is(err, identity.ErrNotClaimant) {
		t.Fatalf("the released source: %v", err)
	}
}

// TestUnreadableClaimCounts: a claim object that does not parse still
// claims the bucket.
func TestUnreadableClaimCounts(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.Put(ctx, identity.Key("cccc"), strings.NewReader("{"), 1); err != nil {
		t.Fatal(err)
	}
	claims, err := identity.List(ctx, s)
	if err != nil || len(claims) != 1 || claims[0].UUID != "cccc" {
		t.Fatalf("List: %v, %+v", err, claims)
	}
	if err := identity.Exclusive(ctx, s, format("aaaa")); !errors.Is(err, identity.ErrNotClaimant) {
		t.Fatalf("open beside an unreadable claim: %v", err)
	}
}

// TestGuard: a guarded store deletes only while its volume claims the
// bucket alone.
func TestGuard(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	a := format("aaaa")
	g := identity.Guard(s, a)
	put := func(key string) {
		if err := s.Put(ctx, key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	put("meta-backup/1")
	if err := g.Delete(ctx, "meta-backup/1"); err != nil {
		t.Fatalf("sole claimant: %v", err)
	}
	put("meta-backup/2")
	if err := identity.Put(ctx, s, identity.For(format("bbbb"), identity.HowLoad)); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(ctx, "meta-backup/2"); !errors.Is(err, identity.ErrShared) {
		t.Fatalf("shared bucket: %v", err)
	}
	if _, err := s.Head(ctx, "meta-backup/2"); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
}
