package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestOpsOnStandby: a standby (-role auto on PostgreSQL) serves the operator view before it
// takes over: role standby, no desk read, its HA figures, and a running sampler; the
// leader's view says it leads.
func TestOpsOnStandby(t *testing.T) {
	dsn := pgDatabase(t)
	leader := startHADesk(t, dsn, roleLeader, "127.0.0.1:0", "127.0.0.1:0")
	la := leader.waitReady(t, 20*time.Second)
	var st opsState
	getOps(t, "http://"+la[1]+"/ops/state", &st)
	if st.Role != "leader" || st.Desk == nil || st.Follower.HA == nil || !st.Follower.HA.Leader || st.Journals[0].Bytes != nil {
		t.Fatalf("the leader's view: %+v", st)
	}

	admin := freeAddr(t)
	startHADesk(t, dsn, roleAuto, freeAddr(t), admin)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/ops/state")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			_ = resp.Body.Close()
			if err == nil && st.Role == "standby" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby's view: %v %+v", err, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Desk != nil || st.Follower.HA == nil || st.Follower.HA.Leader {
		t.Fatalf("the standby's view: %+v", st)
	}
	for {
		var se opsSeries
		getOps(t, "http://"+admin+"/ops/series", &se)
		if len(se.T) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby's sampler took no sample")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
