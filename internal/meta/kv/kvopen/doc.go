// Package kvopen opens the kv.Store a META-URL names, choosing the backend
// by the URL's scheme. It exists apart from package kv because kv must not
// import its backends (they import kv).
//
// Import rules: kvopen imports kv and the backends (sqlkv, rediskv,
// memkv); nothing below the volume wiring and the CLI should import it.
package kvopen
