package metrics

// The names of every metric a mount exports (the Grafana dashboard in
// docs/grafana/shoal.json and Parse use them; docs/admin.md explains
// each). Counters end in _total, durations are in seconds, sizes in bytes.
const (
	FuseOpSeconds   = "shoal_fuse_op_duration_seconds"                 // histogram by op: every FUSE request the kernel sent
	FuseOpErrors    = "shoal_fuse_op_errors_total"                     // by op: requests answered with an error (ENOENT included)
	FuseReadBytes   = "shoal_fuse_read_bytes_total"                    // bytes returned by read requests
	FuseWriteBytes  = "shoal_fuse_written_bytes_total"                 // bytes accepted by write requests
	ObjectSeconds   = "shoal_object_request_duration_seconds"          // histogram by op (get, put, head, delete, list): requests to the backend, each retry one
	ObjectErrors    = "shoal_object_request_errors_total"              // by op: requests that failed (a missing object on get/head is not a failure)
	ObjectRetries   = "shoal_object_retries_total"                     // by op: requests that retried a failed one (each also in ObjectSeconds)
	ObjectBackoff   = "shoal_object_retry_backoff_seconds_total"       // by op: time the retry policy waited before its retries
	ObjectPutBytes  = "shoal_object_put_bytes_total"                   // bytes sent by put requests, retries included
	EngineTxns      = "shoal_engine_transactions_total"                // by kind (update, view)
	EngineTxnSecs   = "shoal_engine_transaction_seconds_total"         // by kind: time in transactions, retries included
	EngineRetries   = "shoal_engine_retries_total"                     // extra attempts of update transactions (conflicts and brief outages, not told apart)
	EngineRetrySecs = "shoal_engine_retried_transaction_seconds_total" // total time of the update transactions that retried
	EngineConflicts = "shoal_engine_conflicts_total"                   // update transactions that gave up still conflicting (EIO); cleared conflicts are retries
	EngineFailed    = "shoal_engine_failed_transactions_total"         // update transactions that returned an error (ENOENT, EEXIST... included)
	EngineCached    = "shoal_engine_cached_reads_total"                // point reads (lookups, getattrs; on SQLite opens too) answered from the engine's client-side cache (Redis, SQLite), not a transaction
	BlocksPut       = "shoal_data_blocks_put_total"                    // block objects stored
	BlockPutFails   = "shoal_data_block_put_failures_total"            // block uploads that failed after the store's retries (kept for a later flush)
	BlocksFetched   = "shoal_data_blocks_fetched_total"                // by kind (block, range): Gets of block data
	FetchedBytes    = "shoal_data_fetched_bytes_total"                 // block bytes received from the store
	CacheHits       = "shoal_cache_hits_total"                         // block reads served from the read cache
	CacheMisses     = "shoal_cache_misses_total"                       // block reads that went to the store
	CacheBytes      = "shoal_cache_bytes"                              // read cache held now
	BufferBytes     = "shoal_write_buffer_bytes"                       // unflushed write bytes held now
	BufferLimit     = "shoal_write_buffer_limit_bytes"                 // the write buffer's size (--buffer-size)
	OpenHandles     = "shoal_open_handles"                             // open file handles
	OpenFiles       = "shoal_open_files"                               // distinct files open through this mount
	LockedFiles     = "shoal_locked_files"                             // open files a lock was taken through since their open (files, not locks; unlock keeps them)
	CompactBacklog  = "shoal_compaction_backlog"                       // chunks due for compaction: the one being compacted and those queued
	CleanerBacklog  = "shoal_cleaner_backlog"                          // freed slices waiting to be deleted
	HeartbeatAge    = "shoal_session_heartbeat_age_seconds"            // since the session's last renewal was sent; -1 without a session
	UptimeSeconds   = "shoal_uptime_seconds"                           // since the mount started
)
