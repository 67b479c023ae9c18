// Package cli is how every command under cmd/ starts: it answers -version (package
// buildinfo) before anything else, runs the command on its arguments and standard streams,
// and exits with the status the command returns.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/deskco/rfqdesk/internal/buildinfo"
)

// Main is the main function of the command named name: with -version or --version first
// it prints the build line (buildinfo) and returns; otherwise it runs run on the
// arguments, standard output and standard error, and exits with its status.
func Main(name string, run func(args []string, stdout, stderr io.Writer) int) {
	if version(name) {
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// MainInterruptible is Main for a command that stops cleanly when asked: the context run
// gets ends at the first SIGINT or SIGTERM (a second one kills the process).
func MainInterruptible(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	if version(name) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Once the first signal ended the context, stop catching: a second one gets the
	// default action and ends a shutdown that hangs.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// version prints the build line of the command named name and reports true when the
// command line asks for it.
func version(name string) bool {
	if !buildinfo.Requested(os.Args[1:]) {
		return false
	}
	fmt.Println(buildinfo.Read().Line(name))
	return true
}
