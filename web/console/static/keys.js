// keys.js: the party key, made and kept in this browser with WebCrypto (Ed25519), the
// party-id fingerprint exactly as the desk (and Canton) forms it, signatures over raw hash
// bytes, and the encrypted backup file (PBKDF2-SHA-256 → AES-256-GCM). No DOM here: the Go
// tests import this module into a blank page and check it against crypto/ed25519.

const ED = { name: "Ed25519" };

/** Standard padded base64 of bytes. */
export function toB64(bytes) {
  const u = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = "";
  for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Bytes of standard padded base64; throws on anything else. */
export function fromB64(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    throw new Error("not standard base64");
  }
  const bin = atob(s);
  const u = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
  return u;
}

function toHex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

function b64url(bytes) {
  return toB64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromB64url(s) {
  const t = s.replace(/-/g, "+").replace(/_/g, "/");
  return fromB64(t + "=".repeat((4 - (t.length % 4)) % 4));
}

/**
 * A fresh Ed25519 key pair. The private key is extractable only so that it can be written
 * into the encrypted backup; it is never sent anywhere.
 */
export async function generateKeyPair() {
  return crypto.subtle.generateKey(ED, true, ["sign", "verify"]);
}

/** The 32 raw bytes of a public key. */
export async function publicKeyRaw(publicKey) {
  return new Uint8Array(await crypto.subtle.exportKey("raw", publicKey));
}

/**
 * The part of a party id after "::" the desk derives from a public key: "1220" (the
 * multihash prefix of SHA-256) and the hex of SHA-256 over the hash purpose 12 as 4
 * big-endian bytes followed by the raw 32-byte key (client.Fingerprint in Go).
 */
export async function fingerprint(rawPublicKey) {
  const buf = new Uint8Array(4 + rawPublicKey.length);
  new DataView(buf.buffer).setUint32(0, 12, false);
  buf.set(rawPublicKey, 4);
  return "1220" + toHex(await crypto.subtle.digest("SHA-256", buf));
}

/** Throws unless partyId ("<hint>::<fingerprint>") is bound to rawPublicKey. */
export async function verifyPartyId(partyId, rawPublicKey) {
  const i = partyId.lastIndexOf("::");
  if (i <= 0) throw new Error(`party id ${partyId} is not of the form <hint>::<fingerprint>`);
  const want = await fingerprint(rawPublicKey);
  if (partyId.slice(i + 2) !== want) {
    throw new Error(`party id ${partyId} is not bound to this browser's key (want ::${want})`);
  }
}

/**
 * Signs a prepared-transaction or topology hash given in its wire form (standard base64):
 * the signature is over the RAW decoded bytes, returned as standard base64 (64 bytes).
 */
export async function signHash(privateKey, hashB64) {
  const raw = fromB64(hashB64);
  if (raw.length === 0) throw new Error("empty hash");
  return toB64(await crypto.subtle.sign(ED, privateKey, raw));
}

/** Signs a key-rotation challenge as UTF-8 text (the only text the desk has signed). */
export async function signText(privateKey, text) {
  return toB64(await crypto.subtle.sign(ED, privateKey, new TextEncoder().encode(text)));
}

/** The backup file's format name and version. */
export const BACKUP_FORMAT = "rfqdesk-console-backup";
export const BACKUP_VERSION = 1;
const PBKDF2_ITERATIONS = 600000; // OWASP 2023 for PBKDF2-HMAC-SHA256

async function backupKey(passphrase, salt, iterations) {
  const base = await crypto.subtle.importKey("raw", new TextEncoder().encode(passphrase), "PBKDF2", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "PBKDF2", hash: "SHA-256", salt, iterations },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/**
 * The encrypted backup of an identity, as the JSON text of the file to download. The
 * plaintext is {partyId, hint, apiKey, seed} with seed the standard base64 of the 32-byte
 * Ed25519 private key (the same seed deskctl keeps as privateKey); it is sealed with
 * AES-256-GCM under a key derived from the passphrase with PBKDF2-SHA-256, and the header
 * fields (format, version, party id) are bound as additional data.
 */
export async function exportBackup(identity, passphrase) {
  if (!passphrase || passphrase.length < 8) throw new Error("the passphrase must be at least 8 characters");
  const jwk = await crypto.subtle.exportKey("jwk", identity.keys.privateKey);
  const plain = JSON.stringify({
    partyId: identity.partyId,
    hint: identity.hint,
    apiKey: identity.apiKey,
    seed: toB64(fromB64url(jwk.d)),
  });
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const header = { format: BACKUP_FORMAT, version: BACKUP_VERSION, partyId: identity.partyId };
  const key = await backupKey(passphrase, salt, PBKDF2_ITERATIONS);
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(JSON.stringify(header)) },
    key,
    new TextEncoder().encode(plain),
  );
  return JSON.stringify({
    ...header,
    kdf: { name: "PBKDF2-SHA-256", iterations: PBKDF2_ITERATIONS, salt: toB64(salt) },
    cipher: { name: "AES-256-GCM", iv: toB64(iv) },
    ciphertext: toB64(sealed),
  }, null, 2) + "\n";
}

/**
 * The identity sealed in a backup file's text, opened with the passphrase. A wrong
 * passphrase or an altered file throws "wrong passphrase or damaged file". The key pair is
 * rebuilt from the seed and checked against the party id.
 */
export async function importBackup(text, passphrase) {
  let f;
  try {
    f = JSON.parse(text);
  } catch {
    throw new Error("not a console backup file (not JSON)");
  }
  if (f.format !== BACKUP_FORMAT) throw new Error("not a console backup file");
  if (f.version !== BACKUP_VERSION) throw new Error(`backup version ${f.version} is not known to this console`);
  const iterations = f.kdf && f.kdf.iterations;
  if (!Number.isInteger(iterations) || iterations < 100000 || iterations > 10000000) {
    throw new Error("backup file: bad key-derivation settings");
  }
  const header = { format: f.format, version: f.version, partyId: f.partyId };
  let plain;
  try {
    const key = await backupKey(passphrase, fromB64(f.kdf.salt), iterations);
    plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromB64(f.cipher.iv), additionalData: new TextEncoder().encode(JSON.stringify(header)) },
      key,
      fromB64(f.ciphertext),
    );
  } catch {
    throw new Error("wrong passphrase or damaged file");
  }
  const p = JSON.parse(new TextDecoder().decode(plain));
  const keys = await keyPairFromSeed(fromB64(p.seed));
  await verifyPartyId(p.partyId, await publicKeyRaw(keys.publicKey));
  return { partyId: p.partyId, hint: p.hint, apiKey: p.apiKey, keys };
}

// The DER prefix of a PKCS#8 Ed25519 private key (RFC 8410) before its 32-byte seed.
const PKCS8_ED25519 = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/** An extractable key pair rebuilt from a 32-byte Ed25519 seed. */
export async function keyPairFromSeed(seed) {
  if (seed.length !== 32) throw new Error(`private key seed of ${seed.length} bytes, want 32`);
  const der = new Uint8Array(PKCS8_ED25519.length + 32);
  der.set(PKCS8_ED25519);
  der.set(seed, PKCS8_ED25519.length);
  const privateKey = await crypto.subtle.importKey("pkcs8", der, ED, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", privateKey);
  const publicKey = await crypto.subtle.importKey("raw", fromB64url(jwk.x), ED, true, ["verify"]);
  return { privateKey, publicKey };
}
