package objopen

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"shoal/internal/object"
	"shoal/internal/object/filestore"
	"shoal/internal/object/memstore"
	"shoal/internal/object/s3store"
)

// Checker is implemented by stores that can verify they are reachable and
// writable before anything is stored (s3store.Store).
type Checker interface {
	Check(ctx context.Context) error
}

var _ Checker = (*s3store.Store)(nil)

// opener builds one kind of store.
type opener func(ctx context.Context, bucket string) (object.Store, error)

var openers = map[string]opener{
	"file": openFile,
	"s3":   openS3,
	"mem":  openMem,
}

// Kinds lists the storage kinds Open accepts, sorted.
func Kinds() []string {
	kinds := make([]string, 0, len(openers))
	for k := range openers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Open returns the store of the given kind at bucket.
func Open(ctx context.Context, storage, bucket string) (object.Store, error) {
	open, ok := openers[storage]
	if !ok {
		return nil, fmt.Errorf("objopen: unknown storage %q (known: %s)", storage, strings.Join(Kinds(), ", "))
	}
	if bucket == "" && storage != "mem" {
		return nil, fmt.Errorf("objopen: storage %s needs a bucket (a directory for file, a URL for s3)", storage)
	}
	return open(ctx, bucket)
}

func openFile(_ context.Context, dir string) (object.Store, error) {
	return filestore.New(dir)
}

func openS3(ctx context.Context, rawURL string) (object.Store, error) {
	cfg, err := s3store.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return s3store.New(ctx, cfg)
}

// memStores keeps "mem" stores by name for the life of the process, so two
// Opens of the same name (a format, then a mount, in one test) share data.
var (
	memMu     sync.Mutex
	memStores = map[string]*memstore.Store{}
)

func openMem(_ context.Context, name string) (object.Store, error) {
	memMu.Lock()
	defer memMu.Unlock()
	s, ok := memStores[name]
	if !ok {
		s = memstore.New()
		memStores[name] = s
	}
	return s, nil
}
