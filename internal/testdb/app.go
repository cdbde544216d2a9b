package testdb

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"

	sqlite "github.com/glebarez/go-sqlite"
)

// AppEnv names the environment variable that makes a test binary act as
// an application with its own SQLite function (AppMain): its value is the
// database path.
const AppEnv = "PREFLIGHT_TEST_APP_DB"

// AppFunction is the function only the application defines: myf(x) is x
// in upper case.
const AppFunction = "myf"

// AppMain is an application that registers AppFunction with the driver
// (process-wide, for good: run it in a child process, from TestMain when
// AppEnv is set) and opens the database at $PREFLIGHT_TEST_APP_DB in WAL
// mode. It creates table app(a text, b text generated always as (myf(a))
// virtual) with an index on myf(a) unless it exists (PRAGMA quick_check
// needs myf for the generated column, integrity_check also for the
// index), inserts one row, prints "app: journal_mode=MODE rows=N" and
// returns the exit code: 0, or 1 after printing the error.
func AppMain() int {
	path := os.Getenv(AppEnv)
	err := sqlite.RegisterDeterministicScalarFunction(AppFunction, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		return strings.ToUpper(fmt.Sprint(args[0])), nil
	})
	if err == nil {
		err = appRun(path)
	}
	if err != nil {
		fmt.Println("app: error:", err)
		return 1
	}
	return 0
}

func appRun(path string) error {
	db, err := sql.Open("sqlite", DSN(path, "_pragma=busy_timeout(2000)", "_pragma=journal_mode(WAL)"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`create table if not exists app(a text, b text generated always as (myf(a)) virtual)`,
		`create index if not exists app_myf on app(myf(a))`,
		`insert into app(a) values ('row')`,
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	var mode string
	var n int
	if err := db.QueryRow(`pragma journal_mode`).Scan(&mode); err != nil {
		return err
	}
	if err := db.QueryRow(`select count(*) from app where b = myf(a)`).Scan(&n); err != nil {
		return err
	}
	fmt.Printf("app: journal_mode=%s rows=%d\n", mode, n)
	return db.Close()
}
