package pgcluster

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStartConnectStop starts a cluster, connects over TCP with the password, and stops it.
func TestStartConnectStop(t *testing.T) {
	c, err := ForTests()
	c = Need(t, c, err)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	dsn, err := c.CreateDatabase(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d %v", one, err)
	}
	bad := *c
	bad.Password = "wrong"
	if conn, err := pgx.Connect(ctx, bad.URL("probe")); err == nil {
		conn.Close(ctx)
		t.Fatal("connected with a wrong password")
	}
}
