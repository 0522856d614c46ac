// Package migrations holds podpath's SQL migrations, embedded in the binary
// and applied with tern by `podpath migrate` and at `podpath serve` start.
package migrations

import "embed"

// FS holds the migration files, NNN_name.sql.
//
//go:embed *.sql
var FS embed.FS
