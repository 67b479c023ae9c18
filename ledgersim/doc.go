// Package ledgersim is the desk's embedded, in-process, deterministic Canton-style
// ledger: the production default ledger the desk settles on, and the ledger of every
// simulation.
//
// # Model
//
//   - Parties. An external party holds an Ed25519 key; its id is
//     "<hint>::1220<64 hex>", the hex being Canton's key fingerprint: SHA-256 over the
//     4-byte big-endian hash purpose 12 and the raw public key (Fingerprint).
//     OnboardExternal returns the topology transactions whose 34-byte multihashes the party signs;
//     CompleteOnboarding allocates it once every signature verifies. Internal parties
//     (operator, fee party, faucet reservoir, house parties) are signed for by the desk:
//     their key derives from the seed and hint, and they act through Submit.
//   - Instruments live in a token registry (admin party + id) with decimals, catalog
//     metadata for rendering: every amount is positive with at most
//     money.MaxFractionDigits (10) fractional digits, whatever the instrument's decimals.
//     Delist removes one from the catalog; its holdings remain and show the raw
//     registry id. ListInstrument adds one after genesis (a journaled input), minting
//     the faucet reservoir's funding of it in the same update.
//   - Holdings are contracts ("00" + hex) with owner, instrument, amount and an optional
//     Lock (holders, expiry, context). Spending splits (change is a new free holding) and
//     merges (several inputs, one output) keep every sum exact. A lapsed lock counts as
//     free and its owner may spend the holding.
//   - Transfer creates a pending TransferInstruction (the receiver's deposit inbox) and
//     locks the sender's funds; AcceptTransfer, RejectTransfer and WithdrawTransfer end it.
//     The faucet is Transfer commands submitted by the reservoir party (FaucetTransfers).
//   - On testnet and mainnet the native coin reaches only a party with a transfer
//     preapproval. CreatePreapproval makes one: a party for itself, or an internal party
//     (the desk's operator) as provider on behalf of any party, external ones included,
//     so that a hosted party needs to sign nothing for it. On sandbox it is a no-op.
//   - Allocate locks a Send allocation's holdings (change returned) or records a Receive
//     allocation's consent; CancelAllocation and WithdrawAllocation release. Settle, by
//     the executor, consumes every allocation of a settlement and moves every leg in one
//     Update, or moves nothing.
//   - External parties Prepare a command (inputs chosen, hash fixed, expiry set) and
//     Execute it with their signature; internal parties Submit. Commands are
//     deduplicated by (acting party, command id), as Canton does: a repeat of one that
//     took effect is refused ErrDuplicate naming the earlier submission, and its outcome
//     is read from Completions (completions.go).
//   - Prepare answers the prepared transaction serialized (Prepared.Blob, blob.go), which
//     Execute takes back. An execute is in flight for Config.SequencingDelay between its
//     sequencing and its commit (inflight.go): its inputs are locked (a concurrent
//     execute or submit naming one: ErrContention) and its command id is in flight (a
//     concurrent duplicate: ErrAlreadyInFlight).
//
// # Determinism and journaling
//
// Ids derive from Config.Seed and a counter in the state; time comes only from
// Config.Clock; no map iteration decides an output. Every state change is an Input,
// handed to Config.Recorder in apply order; Replay applies recorded inputs to a fresh
// ledger built from the same Config, reaching the same Digest.
//
// # Faults
//
// Config.FaultPlan is consulted on every call of the ledger API (queries and Delist
// excepted): it can delay the answer (reported to Config.Sleep outside the lock), reject
// the call with no effect (contention, unavailable, rejected, internal), or let it take
// effect and lose the answer (ErrUnknownOutcome; a retry with the same command id returns
// the original Update).
//
// # Errors
//
// Every error is an *Error with a Category; match with errors.Is against the Err*
// sentinels, and use Retryable for the transient ones.
//
// ENCODING.md documents the hash encodings; testdata/golden.json holds their vectors.
package ledgersim
