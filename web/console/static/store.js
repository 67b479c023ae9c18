// store.js: what the page must keep, and nothing else, in this browser's IndexedDB: one
// record with the party id, hint, API key and the Ed25519 key pair as CryptoKey objects
// (IndexedDB stores them as they are; they are never written out except sealed in the
// encrypted backup the person downloads). Balances, RFQs and trades are always read from
// the desk, never stored.

const DB = "rfqdesk-console";
const STORE = "identity";
const KEY = "current";

function open() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function tx(mode, fn) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      const req = fn(t.objectStore(STORE));
      t.oncomplete = () => resolve(req.result);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error);
    });
  } finally {
    db.close();
  }
}

/** The kept identity, or undefined. */
export function load() {
  return tx("readonly", (s) => s.get(KEY));
}

/** Keeps identity {partyId, hint, apiKey, keys}, replacing any other. */
export function save(identity) {
  return tx("readwrite", (s) => s.put(identity, KEY));
}

/** Forgets the identity. */
export function clear() {
  return tx("readwrite", (s) => s.delete(KEY));
}
