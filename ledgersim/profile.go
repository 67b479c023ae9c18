package ledgersim

import "fmt"

// Profile is the network the simulator plays (DECISIONS.md, Networks).
type Profile string

// The three profiles.
const (
	ProfileTestnet Profile = "testnet" // faucet armed, withdraw works, native coin needs a preapproval
	ProfileSandbox Profile = "sandbox" // no faucet, no withdraw, preapproval is a no-op
	ProfileMainnet Profile = "mainnet" // no faucet, withdraw works, native coin needs a preapproval
)

// ParseProfile reads a profile name; the empty string is the default, testnet.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case "":
		return ProfileTestnet, nil
	case ProfileTestnet, ProfileSandbox, ProfileMainnet:
		return p, nil
	}
	return "", fmt.Errorf("ledgersim: unknown profile %q (want testnet, sandbox or mainnet)", s)
}

// Valid reports whether p is one of the three profiles.
func (p Profile) Valid() bool {
	return p == ProfileTestnet || p == ProfileSandbox || p == ProfileMainnet
}

// FaucetEnabled reports whether the faucet reservoir may send (testnet only).
func (p Profile) FaucetEnabled() bool { return p == ProfileTestnet }

// WithdrawEnabled reports whether an external party may send a transfer (not on sandbox).
func (p Profile) WithdrawEnabled() bool { return p != ProfileSandbox }

// PreapprovalRequired reports whether receiving the native coin needs a transfer
// preapproval (testnet and mainnet). On sandbox CreatePreapproval is a no-op.
func (p Profile) PreapprovalRequired() bool { return p != ProfileSandbox }
