//go:build tools

// This file pins the project's dependencies in go.mod before every package
// that uses them exists, so that parallel work does not race on go.mod.
package tools

import (
	_ "github.com/google/btree"
	_ "github.com/hanwen/go-fuse/v2/fuse"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/mattn/go-sqlite3"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "golang.org/x/sys/unix"
	_ "pgregory.net/rapid"
)
