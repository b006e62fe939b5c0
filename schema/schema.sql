-- The genderize name database. Built once by `genderize-db build`, then only
-- read (the engine opens it immutable). Bump schema.Version on any change.

-- Build facts: schema_version, built_at (RFC 3339, UTC), global_model.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- One row per source the database was built from, with what the build did
-- to its rows. rows_read = rows_kept + rows_merged + rows_dropped.
CREATE TABLE sources (
	id           TEXT PRIMARY KEY, -- e.g. us_ssa, from the file name
	files        TEXT NOT NULL,    -- the input files, space separated
	format       TEXT NOT NULL,    -- counts | lexicon | ssa
	licence      TEXT NOT NULL,
	counts       TEXT NOT NULL,    -- what one count means
	countries    INTEGER NOT NULL,
	rows_read    INTEGER NOT NULL,
	rows_kept    INTEGER NOT NULL,
	rows_merged  INTEGER NOT NULL,
	rows_dropped INTEGER NOT NULL,
	dropped      TEXT NOT NULL     -- JSON object: reason -> rows
) WITHOUT ROWID;

-- Per country: how much data it has and the weight its counts get in the
-- global model (see the engine's package documentation).
CREATE TABLE countries (
	country TEXT PRIMARY KEY,
	names   INTEGER NOT NULL, -- distinct exact keys
	records INTEGER NOT NULL, -- sum of all counts
	weight  REAL NOT NULL     -- factor applied to its counts in the global model
) WITHOUT ROWID;

-- Everything a lookup reads, one indexed row per (key, country, form):
--   form 0: the exact key (namekey.Key);
--   form 1: the accent-folded key (namekey.Fold), summing every exact key
--           that folds to it; stored only when that differs from the exact
--           row with the same key, so a reader takes form 1 and else form 0.
--   country '' holds the global model: all countries pooled. Every key
--           has one. A key found in one country only (most keys) has no
--           row of its own for that country: its global row names the
--           country in sole and holds its counts. So the row of (key, C)
--           is the row with country C, else the global row whose sole is C.
-- female_share is the female share the answer is decided on: female /
-- (female + male) for a country, the weighted share for the global model.
-- evidence is what the records are worth to the stated probability: each
-- record counted at its source's trust (1 for a birth register, census or
-- Wikidata person count, 1/2 for a noisy register or a lexicon entry; see
-- the importer's trust), summed like the counts. NULL stands for
-- female + male, what every record at full trust is worth (most rows):
-- a NULL takes no room in the row, a REAL eight bytes, and the file is
-- mapped into every plugin process.
CREATE TABLE names (
	key          TEXT NOT NULL,
	country      TEXT NOT NULL,
	form         INTEGER NOT NULL,
	female       INTEGER NOT NULL,
	male         INTEGER NOT NULL,
	female_share REAL NOT NULL,
	sole         TEXT, -- global rows only: the one country the key is found in
	evidence     REAL, -- NULL: female + male
	PRIMARY KEY (key, country, form)
) WITHOUT ROWID;
