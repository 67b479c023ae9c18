package node_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/internal/drive"

	"github.com/deskco/rfqdesk/journal"
	"github.com/deskco/rfqdesk/machine"
	"github.com/deskco/rfqdesk/money"
	"github.com/deskco/rfqdesk/node"
)

// TestOlderDataRefused: data written by earlier desks (journal segments of format
// version 1, JSON journal records of record versions 1 and 2, JSON desk snapshots) is
// refused with an error naming the version found and the one this build reads, and a node
// does not open such a data directory.
func TestOlderDataRefused(t *testing.T) {
	cfg := journalTestConfig()
	genesis, err := node.EncodeDeskGenesis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, rec, want string
	}{
		{"record version 1", `{"v":1,"seq":2,"at":"2026-03-01T12:00:01Z","kind":"tick","input":{}}`,
			"journal record version 1 (JSON, written by an earlier desk); this desk reads only versions 3 to 7"},
		{"record version 2", `{"v":2,"seq":2,"at":"2026-03-01T12:00:01Z","kind":"tick","bin":""}`,
			"journal record version 2 (JSON, written by an earlier desk); this desk reads only versions 3 to 7"},
		{"unknown binary version", "\x08\x02", "journal record version 8; this desk reads only versions 3 to 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := journal.NewMemLog(true)
			if _, err := log.Append(context.Background(), genesis, []byte(tc.rec)); err != nil {
				t.Fatal(err)
			}
			_, _, err := node.ReplayDesk(log, false, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReplayDesk = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	t.Run("JSON snapshot", func(t *testing.T) {
		desk, err := machine.NewDesk(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tick, err := machine.EncodeEnvelope(machine.Envelope{Seq: 2, At: at, Input: machine.Tick{}})
		if err != nil {
			t.Fatal(err)
		}
		log := journal.NewMemLog(true)
		if _, err := log.Append(context.Background(), genesis, tick); err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(desk) // a snapshot as version-1 desks saved it
		if err != nil {
			t.Fatal(err)
		}
		if err := log.SaveSnapshot(2, js); err != nil {
			t.Fatal(err)
		}
		want := "a JSON desk snapshot (written by an earlier desk); this desk reads only binary snapshots of versions 1 to 5"
		if _, _, err := node.ReplayDesk(log, true, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("ReplayDesk = %v, want an error containing %q", err, want)
		}
	})

	t.Run("data directory of format version 1", func(t *testing.T) {
		dir := t.TempDir()
		n, _ := open(t, dir, drive.NewEvents())
		closeNode(t, n)
		segs, err := filepath.Glob(filepath.Join(dir, "desk", "*.seg"))
		if err != nil || len(segs) == 0 {
			t.Fatalf("no desk segment in %s (%v)", dir, err)
		}
		b, err := os.ReadFile(segs[0])
		if err != nil {
			t.Fatal(err)
		}
		// The segment header (docs/journal.md): magic, version uint16 LE, ..., CRC32C of the
		// 28 bytes before it. Written as a version-1 desk wrote it.
		binary.LittleEndian.PutUint16(b[8:10], 1)
		binary.LittleEndian.PutUint32(b[28:32], crc32.Checksum(b[:28], crc32.MakeTable(crc32.Castagnoli)))
		if err := os.WriteFile(segs[0], b, 0o644); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("segment version 1, this code reads only version %d", journal.FormatVersion)
		if n, err := node.Open(options(dir, drive.NewEvents())); err == nil || !strings.Contains(err.Error(), want) {
			if err == nil {
				closeNode(t, n)
			}
			t.Fatalf("Open = %v, want an error containing %q", err, want)
		}
	})
}

// houseKey is the API key hash of journalTestConfig's house taker, a party without
// registration whose inputs the desk accepts.
const houseKey = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988"

// journalTestConfig is the desk configuration of the tests that write journals by hand:
// its ledger parties are made up (no ledger is involved), and its house taker can draw
// the faucet and ask for quotes with houseKey.
func journalTestConfig() machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Seed, cfg.Operator, cfg.FeeParty, cfg.Reservoir = 7, "operator::1220aa", "fees::1220bb", "reservoir::1220cc"
	cfg.Instruments = []machine.Instrument{
		{Symbol: "cbtc", Display: "CBTC", Decimals: 8, USDPrice: money.MustParse("100000"), FaucetAmount: money.MustParse("0.01"), RegistryID: "reg:cbtc"},
		{Symbol: "usdcx", Display: "USDCx", Decimals: 6, USDPrice: money.MustParse("1"), FaucetAmount: money.MustParse("1000"), RegistryID: "reg:usdcx"},
		{Symbol: "cc", Display: "CC", Decimals: 10, USDPrice: money.MustParse("0.2"), Native: true, RegistryID: "reg:cc"},
	}
	cfg.FeeTiers = []machine.FeeTier{{MinNotionalUSD: money.Zero, FeeBps: 25}}
	cfg.House = []machine.HouseParty{{Hint: "house-taker", PartyID: "house-taker::1220dd", Role: machine.HouseTaker, KeyHash: houseKey}}
	return cfg
}
