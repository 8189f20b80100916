// Package fencing writes to PostgreSQL with a lease's fence (docs/fencing.md):
// a write lands only if the row's last fence is smaller, so a holder paused
// past its lease cannot overwrite the holder after it. It needs only
// database/sql, with any PostgreSQL driver whose placeholders are $1, $2, …
// (lib/pq, pgx's stdlib).
//
// The table has a row per key and its last fence, as numeric(20): fences are
// unsigned 64-bit numbers, beyond bigint from 2038 on, and database/sql
// refuses a uint64 with its high bit set, so the helpers send the fence as
// decimal text.
//
//	CREATE TABLE summaries (key text PRIMARY KEY, fence numeric(20) NOT NULL, text text NOT NULL);
//
//	err := fencing.Write(ctx, db, fencing.Table{Name: "summaries"}, "chat-1", lease.Fence,
//		fencing.Set("text", text))
//	if errors.Is(err, fencing.ErrRefused) { /* stale: another holder wrote after us; stop */ }
package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrRefused is what a refused write's error Is: the row's fence was already
// as large as the write's or larger (for Update, or there was no row), and
// nothing changed. The holder's lease is stale; it should stop.
var ErrRefused = errors.New("fenced write refused")

// RefusedError is the error of a refused write.
type RefusedError struct {
	// Key is the key written.
	Key string
	// Fence is the write's fence.
	Fence uint64
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the write to %q with fence %d was refused: a write with a fence as large or larger landed first", e.Key, e.Fence)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Execer runs a statement: *sql.DB, *sql.Tx and *sql.Conn are Execers.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Table names a fenced table and its key and fence columns.
type Table struct {
	// Name is the table: name or schema.name, each part quoted as an identifier.
	Name string
	// KeyColumn is the key column (text); "key" when empty.
	KeyColumn string
	// FenceColumn is the fence column (numeric(20)); "fence" when empty.
	FenceColumn string
}

// Value is a column and the value a write gives it.
type Value struct {
	Column string
	Value  any
}

// Set is the Value of column.
func Set(column string, value any) Value { return Value{Column: column, Value: value} }

// Write writes values to the row of key with fence, creating the row if there
// is none, in one statement (INSERT … ON CONFLICT … DO UPDATE … WHERE fence <
// $2), inside the transaction if db is a *sql.Tx. The error Is ErrRefused when
// the row's fence is fence or larger: nothing changed.
func Write(ctx context.Context, db Execer, t Table, key string, fence uint64, values ...Value) error {
	k, f := t.columns()
	names := []string{k, f}
	placeholders := []string{"$1", "$2::numeric"}
	set := []string{f + " = EXCLUDED." + f}
	for i, v := range values {
		c := quote(v.Column)
		names = append(names, c)
		placeholders = append(placeholders, "$"+strconv.Itoa(i+3))
		set = append(set, c+" = EXCLUDED."+c)
	}
	query := fmt.Sprintf("INSERT INTO %s AS t (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s WHERE t.%s < EXCLUDED.%s",
		t.name(), strings.Join(names, ", "), strings.Join(placeholders, ", "), k, strings.Join(set, ", "), f, f)
	return execute(ctx, db, query, key, fence, values)
}

// Update is Write for a row that must already exist (UPDATE … WHERE key = $1
// AND fence < $2): a missing row is refused too.
func Update(ctx context.Context, db Execer, t Table, key string, fence uint64, values ...Value) error {
	k, f := t.columns()
	set := []string{f + " = $2::numeric"}
	for i, v := range values {
		set = append(set, quote(v.Column)+" = $"+strconv.Itoa(i+3))
	}
	query := fmt.Sprintf("UPDATE %s SET %s WHERE %s = $1 AND %s < $2::numeric", t.name(), strings.Join(set, ", "), k, f)
	return execute(ctx, db, query, key, fence, values)
}

func execute(ctx context.Context, db Execer, query, key string, fence uint64, values []Value) error {
	args := []any{key, strconv.FormatUint(fence, 10)}
	for _, v := range values {
		args = append(args, v.Value)
	}
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return &RefusedError{Key: key, Fence: fence}
	}
	return nil
}

func (t Table) name() string {
	parts := strings.Split(t.Name, ".")
	for i, p := range parts {
		parts[i] = quote(p)
	}
	return strings.Join(parts, ".")
}

func (t Table) columns() (key, fence string) {
	key, fence = t.KeyColumn, t.FenceColumn
	if key == "" {
		key = "key"
	}
	if fence == "" {
		fence = "fence"
	}
	return quote(key), quote(fence)
}

// quote is name as a quoted SQL identifier.
func quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
