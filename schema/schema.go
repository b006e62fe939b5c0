// Package schema defines the SQLite name database shared by the builder
// (package importer, command genderize-db) and the engine: its SQL and its
// version. A reader refuses a database of another version.
package schema

import (
	_ "embed"
	"net/url"
	"path/filepath"
	"strconv"
)

// Version is the schema version stored in meta.schema_version. Bump it
// whenever schema.sql or the meaning of a column changes.
const Version = 4

// VersionString is Version as stored in the meta table.
var VersionString = strconv.Itoa(Version)

// SQL creates every table of an empty database.
//
//go:embed schema.sql
var SQL string

// Names of the rows of the meta table.
const (
	MetaVersion     = "schema_version"
	MetaBuiltAt     = "built_at"
	MetaGlobalModel = "global_model"
)

// Forms of a key in the names table.
const (
	FormExact  = 0
	FormFolded = 1
)

// DSN returns the SQLite URI of the database file at path with the query
// parameters params (e.g. "mode=ro"): the path is made absolute and
// escaped, so a '?' or '#' in it is not read as the start of parameters.
func DSN(path, params string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: abs, RawQuery: params}).String(), nil
}
