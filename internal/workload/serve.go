package workload

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// ServeWorker is the whole of a worker program on a base other than
// go-sqlite3 (one program links one base; see Base): called with the
// arguments "cleolease bench" starts its workers with (worker --spec
// JSON), it runs the start-up steps of cmd/cleolease's worker without a
// migration (READY; MIGRATE → MIGRATED {"pid":N}; OPEN path), opens the
// file on the spec's base (OpenOn) and measures (Measure, Report). It
// returns the exit status: 0, 1 after an error (printed to stderr), 2 for
// bad arguments. With --once DB (a Short load) it runs Once on DB
// instead, without the protocol.
func ServeWorker(ctx context.Context, args []string, in io.Reader, out io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	spec := fs.String("spec", "", "worker spec (JSON)")
	once := fs.String("once", "", "run one transaction on this database and exit")
	if len(args) == 0 || args[0] != "worker" || fs.Parse(args[1:]) != nil {
		fmt.Fprintln(os.Stderr, "usage: worker --spec JSON [--once DB]")
		return 2
	}
	var s Spec
	if err := json.Unmarshal([]byte(*spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "worker: --spec:", err)
		return 2
	}
	if *once != "" {
		if err := Once(ctx, s, *once); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			return 1
		}
		return 0
	}
	if err := serve(ctx, s, NewWorker(in, out)); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, s Spec, w *Worker) error {
	w.Say("READY")
	if _, err := w.Expect("MIGRATE"); err != nil {
		return err
	}
	w.Say(`MIGRATED {"pid":%d}`, os.Getpid())
	path, err := w.Expect("OPEN")
	if err != nil {
		return err
	}
	db, err := OpenOn(ctx, s.Base, s.Peer, path, s.Sync)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := w.Measure(ctx, db, s, path)
	if err != nil {
		return err
	}
	return w.Report(res)
}
