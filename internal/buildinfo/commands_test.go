package buildinfo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandTakesVersion: the main function of every command under cmd/ begins by
// answering -version through this package, directly or through package cli (cli.Main,
// cli.MainInterruptible), so a new command cannot ship without it.
func TestEveryCommandTakesVersion(t *testing.T) {
	mains, err := filepath.Glob("../../cmd/*/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(mains) < 7 {
		t.Fatalf("found %d commands under cmd/, want at least 7", len(mains))
	}
	for _, file := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		command := filepath.Base(filepath.Dir(file))
		if !answersVersionFirst(f, command) {
			t.Errorf("%s: main does not begin with `cli.Main(%q, …)`, `cli.MainInterruptible(%q, …)` or `if buildinfo.Requested(os.Args[1:]) { fmt.Println(buildinfo.Read().Line(%q)); return }`", file, command, command, command)
		}
	}
}

// answersVersionFirst reports whether f's main function begins with the -version check,
// printing the line under the command's own name.
func answersVersionFirst(f *ast.File, command string) bool {
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "main" || fn.Recv != nil || fn.Body == nil || len(fn.Body.List) == 0 {
			continue
		}
		if call, ok := fn.Body.List[0].(*ast.ExprStmt); ok {
			return callsCLI(call.X, command)
		}
		stmt, ok := fn.Body.List[0].(*ast.IfStmt)
		if !ok || !isCall(stmt.Cond, "buildinfo", "Requested") || len(stmt.Body.List) != 2 {
			return false
		}
		if _, ok := stmt.Body.List[1].(*ast.ReturnStmt); !ok {
			return false
		}
		printed, ok := stmt.Body.List[0].(*ast.ExprStmt)
		if !ok || !isCall(printed.X, "fmt", "Println") {
			return false
		}
		line := printed.X.(*ast.CallExpr).Args
		if len(line) != 1 || !isCall(line[0], "", "Line") {
			return false
		}
		arg := line[0].(*ast.CallExpr).Args
		if len(arg) != 1 {
			return false
		}
		lit, ok := arg[0].(*ast.BasicLit)
		return ok && lit.Value == `"`+command+`"`
	}
	return false
}

// callsCLI reports whether e is cli.Main or cli.MainInterruptible under the command's own
// name (which answer -version first).
func callsCLI(e ast.Expr, command string) bool {
	if !isCall(e, "cli", "Main") && !isCall(e, "cli", "MainInterruptible") {
		return false
	}
	args := e.(*ast.CallExpr).Args
	if len(args) != 2 {
		return false
	}
	lit, ok := args[0].(*ast.BasicLit)
	return ok && lit.Value == `"`+command+`"`
}

// isCall reports whether e calls pkg.name (any receiver when pkg is empty).
func isCall(e ast.Expr, pkg, name string) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	if pkg == "" {
		return true
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// TestVersionOfABuiltCommand builds deskctl and runs it with -version: the line names the
// command, the module and the toolchain, and the command does nothing else.
func TestVersionOfABuiltCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	bin := filepath.Join(t.TempDir(), "deskctl")
	build := exec.Command(gobin, "build", "-o", bin, "../../cmd/deskctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, flag := range []string{"-version", "--version"} {
		cmd := exec.Command(bin, flag)
		cmd.Env = append(os.Environ(), "DESK_URL=http://127.0.0.1:1") // nothing is contacted
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("deskctl %s: %v", flag, err)
		}
		fields := strings.Fields(string(out))
		if len(fields) != 8 || fields[0] != "deskctl" || fields[1] != "github.com/deskco/rfqdesk" || fields[3] != "revision" || !strings.HasPrefix(fields[7], "go") {
			t.Errorf("deskctl %s printed %q", flag, out)
		}
	}
}
