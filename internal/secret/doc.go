// Package secret keeps passwords and keys out of everything Shoal shows or
// stores: command lines, messages, logs, status output, settings and dumps.
//
// It owns four things:
//
//   - Mask, the one masking function every command applies to what it
//     prints: it hides the password of any URL in a text
//     (scheme://user:PASS@host → scheme://user:xxxxx@host), password=
//     query parameters, and every value registered with Register (the
//     passwords this process was given, wherever they came from).
//   - Where an engine password comes from: the URL itself, the environment
//     variable SHOAL_META_PASSWORD, or a file (PasswordFile, which refuses a
//     file that group or others can read). WithPassword puts one into a URL
//     that has none; Split takes it out again.
//   - MaskArgv, which rewrites this process's own command line in place so
//     that /proc/PID/cmdline (and so ps) shows URLs with their passwords
//     masked. On Linux the strings of os.Args point at the argument memory
//     the kernel set up; the kernel reads /proc/PID/cmdline from that same
//     memory, so overwriting the bytes there is what FUSE file systems
//     written in C do with argv. MaskArgv first gives os.Args fresh copies,
//     so the program keeps the real values. Between exec and MaskArgv the
//     password is visible for a few milliseconds; the environment and a
//     password file avoid even that window, which is why the docs
//     recommend them.
//   - Message, what a person is shown of an error, by the CLI (on stderr)
//     and the web console (in its error pages) alike: Mask, then the
//     internal package names errors start with ("sqlkv: ", "metrics: ")
//     removed. It lives here, the lowest package both import.
//
// Import rules: secret imports the standard library only.
package secret
