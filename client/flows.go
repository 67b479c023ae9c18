package client

import (
	"context"
	"crypto/ed25519"
	"fmt"
)

// Register self-registers a new maker party named displayName and returns its identity,
// which the client adopts (API key, party id, hint, key). It uses the client's private key,
// or generates one when the client has none. The steps are register/start, a signature over
// the raw bytes of every topology hash, and register/complete. It also checks that the
// party id the desk allocated is bound to this key (its fingerprint). Save the result with
// SaveIdentity at once: the API key is shown only once.
func (c *Client) Register(ctx context.Context, displayName string) (*Identity, error) {
	key := c.PrivateKey()
	if key == nil {
		var err error
		if key, err = GenerateKey(); err != nil {
			return nil, err
		}
	}
	start, err := c.RegisterStart(ctx, RegisterStartRequest{DisplayName: displayName, PublicKey: PublicKeyBase64(key)})
	if err != nil {
		return nil, fmt.Errorf("client: register: %w", err)
	}
	if err := VerifyPartyID(start.PartyID, key.Public().(ed25519.PublicKey)); err != nil {
		return nil, fmt.Errorf("client: register: %w", err)
	}
	c.mu.Lock()
	c.key = key // the party is bound to it from now on, whatever happens next
	c.mu.Unlock()
	sigs := make([]string, len(start.Topology))
	for i, tx := range start.Topology {
		if sigs[i], err = SignHash(key, tx.Hash); err != nil {
			return nil, fmt.Errorf("client: register: topology %d: %w", i, err)
		}
	}
	done, err := c.RegisterComplete(ctx, RegisterCompleteRequest{RegistrationID: start.RegistrationID, Signatures: sigs})
	if err != nil {
		return nil, fmt.Errorf("client: register: %w", err)
	}
	if done.PartyID != start.PartyID {
		return nil, fmt.Errorf("client: register: completed party %q differs from started party %q", done.PartyID, start.PartyID)
	}
	return c.Identity(), nil
}

// RecoverKey replaces a lost or dead API key by proving ownership of the party key: it asks
// for a challenge, signs it as UTF-8 text and rotates. The client adopts the new key, which
// it also returns; save the identity afterwards. A stream stopped with ErrUnauthorized can be
// restarted after it. It needs the client's party id and private key.
func (c *Client) RecoverKey(ctx context.Context) (string, error) {
	key, party := c.PrivateKey(), c.PartyID()
	if key == nil {
		return "", errNoKey
	}
	if party == "" {
		return "", fmt.Errorf("client: recover key: no party id (use WithIdentity)")
	}
	challenge, err := c.Challenge(ctx, party)
	if err != nil {
		return "", fmt.Errorf("client: recover key: %w", err)
	}
	apiKey, err := c.RotateAPIKey(ctx, RotateRequest{PartyID: party, Challenge: challenge, Signature: SignChallenge(key, challenge)})
	if err != nil {
		return "", fmt.Errorf("client: recover key: %w", err)
	}
	return apiKey, nil
}

// Sign signs one action with the client's private key and returns its base64
// signature.
func (c *Client) Sign(a SignAction) (string, error) {
	key := c.PrivateKey()
	if key == nil {
		return "", errNoKey
	}
	sig, err := SignHash(key, a.Hash)
	if err != nil {
		return "", fmt.Errorf("action %s: %w", a.ID, err)
	}
	return sig, nil
}

// SignAndExecute signs every action with the client's private key and submits the
// signatures in batches of at most MaxBatch (POST /tx/execute, batch form). It returns one
// result per action, in order. An action whose hash cannot be decoded is not sent; its
// result has Status ExecError, Retryable false and an Error starting with "client:". When a
// batch call fails, it returns the results of the batches already answered with the error;
// GET /tx/pending then tells which actions still need a signature.
func (c *Client) SignAndExecute(ctx context.Context, actions []SignAction) ([]ExecuteResult, error) {
	key := c.PrivateKey()
	if key == nil {
		return nil, errNoKey
	}
	results := make([]ExecuteResult, len(actions))
	var batch []ActionSignature
	var batchIdx []int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := c.ExecuteBatch(ctx, batch)
		if err != nil {
			return err
		}
		byID := make(map[string]ExecuteResult, len(res))
		for _, r := range res {
			byID[r.ActionID] = r
		}
		for j, i := range batchIdx {
			r, ok := byID[batch[j].ActionID]
			if !ok {
				r = ExecuteResult{ActionID: batch[j].ActionID, Status: ExecError, Error: "client: no result for this entry in the answer"}
			}
			results[i] = r
		}
		batch, batchIdx = batch[:0], batchIdx[:0]
		return nil
	}
	done := 0 // results[:done] are final
	for i, a := range actions {
		sig, err := SignHash(key, a.Hash)
		if err != nil {
			results[i] = ExecuteResult{ActionID: a.ID, Status: ExecError, Error: "client: " + err.Error()}
			continue
		}
		batch = append(batch, ActionSignature{ActionID: a.ID, Signature: sig})
		batchIdx = append(batchIdx, i)
		if len(batch) == MaxBatch {
			if err := flush(); err != nil {
				return results[:done], fmt.Errorf("client: sign and execute: %w", err)
			}
			done = i + 1
		}
	}
	if err := flush(); err != nil {
		return results[:done], fmt.Errorf("client: sign and execute: %w", err)
	}
	return results, nil
}
