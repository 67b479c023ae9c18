package ledgersim

import (
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"strings"
	"time"
)

// retainedUpdates holds the updates the ledger retains for Update(), command
// deduplication and completions (up to Limits.MaxRetainedUpdates, 100,000 by default),
// oldest first, in a form the garbage collector does not have to scan: one slice of
// fixed-size slots, one byte slice with each update's ids and lists encoded, and indexes
// from a hash of the key to the update's sequence number. Kept as Update values with their
// strings (and as the dedupKey strings of a map), they were the largest single part of the
// live heap of the desk, which holds the ledger twice (its follower's copy for the
// snapshots): 1,130 bytes and ten objects an update, each object marked at every
// collection. Here an update takes about 400 bytes and no object of its own
// (BenchmarkLedgerHeap, TestRetainedUpdatesCompact).
//
// An update's sequence number counts the updates retained since the ledger was built or
// restored; slots[i] is the one numbered first+i, and slots[head:] are the retained ones.
type retainedUpdates struct {
	slots []retainedSlot
	head  int
	first uint64
	// data holds the encoded updates (retainedSlot.at is a position in the stream of all
	// of them; data[0] is at dataBase, and data[dataHead:] are the retained ones').
	data     []byte
	dataHead int
	dataBase uint64
	// syms interns the acting parties and the command kinds: a party id is written once
	// here, not once an update. The table is bounded by the ledger's parties.
	syms   []string
	symIdx map[string]uint32

	seed maphash.Seed
	// mask is ANDed to every key's hash: all bits but in tests, which narrow it to make
	// collisions common.
	mask      uint64
	byID      keyIndex // update id
	byCommand keyIndex // change id: act-as party and command id (dedupKey)
	byPrep    keyIndex // prepared id, of an execute's update
}

// retainedSlot is the fixed part of a retained update: what deduplication, expiry and
// completions read without decoding.
type retainedSlot struct {
	sum    [32]byte // the update's digest contribution
	offset int64
	sec    int64 // RecordTime, Unix seconds and nanoseconds (UTC)
	nsec   int32
	actAs  uint32 // index in syms
	at     uint64 // where its encoding starts in the data stream
	n      uint32 // the encoding's length
}

// keyIndex maps a key's 64-bit hash to the sequence number of the update holding that
// key. The key itself is read from the update to confirm a match; a key whose hash is
// already taken by another retained key is kept, as text, in over (which a collision
// alone fills, so it stays empty in practice). Neither map holds a pointer in its entries
// except over, so the collector does not scan m's buckets.
type keyIndex struct {
	m    map[uint64]uint64
	over map[string]uint64
}

// newRetainedUpdates returns an empty store with room for n updates whose encodings take
// about dataBytes together (Restore knows both; a new ledger neither).
func newRetainedUpdates(n, dataBytes int) *retainedUpdates {
	return &retainedUpdates{
		slots:     make([]retainedSlot, 0, n),
		data:      make([]byte, 0, dataBytes),
		symIdx:    map[string]uint32{},
		seed:      maphash.MakeSeed(),
		mask:      ^uint64(0),
		byID:      keyIndex{m: make(map[uint64]uint64, n)},
		byCommand: keyIndex{m: make(map[uint64]uint64, n)},
		byPrep:    keyIndex{m: make(map[uint64]uint64, n)},
	}
}

// len is the number of retained updates.
func (ru *retainedUpdates) len() int { return len(ru.slots) - ru.head }

// oldest is the slot of the oldest retained update; len() > 0.
func (ru *retainedUpdates) oldest() *retainedSlot { return &ru.slots[ru.head] }

// live returns the retained slots, oldest first (read-only), and the sequence number of
// the first.
func (ru *retainedUpdates) live() ([]retainedSlot, uint64) {
	return ru.slots[ru.head:], ru.first + uint64(ru.head)
}

// slot returns the slot of sequence number seq, which is retained.
func (ru *retainedUpdates) slot(seq uint64) *retainedSlot { return &ru.slots[seq-ru.first] }

func (s *retainedSlot) recordTime() time.Time { return time.Unix(s.sec, int64(s.nsec)).UTC() }

// bytes returns the encoding of the update in slot s.
func (ru *retainedUpdates) bytes(s *retainedSlot) []byte {
	i := int(s.at - ru.dataBase)
	return ru.data[i : i+int(s.n)]
}

func (ru *retainedUpdates) sym(s string) uint32 {
	if i, ok := ru.symIdx[s]; ok {
		return i
	}
	i := uint32(len(ru.syms))
	s = strings.Clone(s) // not a part of a decoded record's text, which it would keep
	ru.syms = append(ru.syms, s)
	ru.symIdx[s] = i
	return i
}

// push retains u, whose digest contribution is sum.
func (ru *retainedUpdates) push(u *Update, sum [32]byte) {
	at := ru.dataBase + uint64(len(ru.data))
	b := ru.data
	b = appendRetStr(b, u.CommandID)
	b = appendRetID(b, u.UpdateID)
	b = appendRetID(b, u.PreparedID)
	b = binary.AppendUvarint(b, uint64(ru.sym(string(u.Kind))))
	b = appendRetIDs(b, u.Created)
	b = appendRetIDs(b, u.Archived)
	b = appendRetID(b, u.Allocation)
	b = appendRetID(b, u.TransferInstruction)
	b = appendRetID(b, u.Preapproval)
	b = appendRetIDs(b, u.Receipts)
	b = appendRetIDs(b, u.Released)
	ru.data = b
	seq := ru.first + uint64(len(ru.slots))
	ru.slots = append(ru.slots, retainedSlot{sum: sum, offset: u.Offset, sec: u.RecordTime.Unix(),
		nsec: int32(u.RecordTime.Nanosecond()), actAs: ru.sym(u.ActAs), at: at, n: uint32(uint64(len(b)) + ru.dataBase - at)})
	ru.byID.put(ru.hashStr(u.UpdateID), seq, func(o uint64) bool { return ru.updateIDIs(o, u.UpdateID) },
		func() string { return u.UpdateID })
	ru.byCommand.put(ru.hashChange(u.ActAs, u.CommandID), seq, func(o uint64) bool { return ru.changeIs(o, u.ActAs, u.CommandID) },
		func() string { return dedupKey(u.ActAs, u.CommandID) })
	if u.PreparedID != "" {
		ru.byPrep.put(ru.hashStr(u.PreparedID), seq, func(o uint64) bool { return ru.preparedIDIs(o, u.PreparedID) },
			func() string { return u.PreparedID })
	}
}

// pop forgets the oldest retained update and returns its slot (valid until the next push).
func (ru *retainedUpdates) pop() retainedSlot {
	seq := ru.first + uint64(ru.head)
	s := ru.slots[ru.head]
	// The keys are read into buffers on the stack: forgetting allocates nothing.
	var idBuf, prepBuf [80]byte
	cmd, b := readRetStr(ru.bytes(&s))
	id, b := appendRetIDText(idBuf[:0], b)
	prep, _ := appendRetIDText(prepBuf[:0], b)
	actAs := ru.syms[s.actAs]
	ru.byID.del(ru.hashBytes(id), seq, id)
	ru.byCommand.del(ru.hashChangeBytes(actAs, cmd), seq, nil)
	if len(ru.byCommand.over) > 0 {
		ru.byCommand.delOver(dedupKey(actAs, string(cmd)), seq)
	}
	if len(prep) > 0 {
		ru.byPrep.del(ru.hashBytes(prep), seq, prep)
	}
	ru.head++
	ru.dataHead = int(s.at + uint64(s.n) - ru.dataBase)
	if ru.head > 1024 && ru.head*2 > len(ru.slots) {
		n := copy(ru.slots, ru.slots[ru.head:])
		ru.slots = ru.slots[:n]
		ru.first += uint64(ru.head)
		ru.head = 0
	}
	if ru.dataHead > 1<<16 && ru.dataHead*2 > len(ru.data) {
		n := copy(ru.data, ru.data[ru.dataHead:])
		ru.data = ru.data[:n]
		ru.dataBase += uint64(ru.dataHead)
		ru.dataHead = 0
	}
	return s
}

// byUpdateID returns the sequence number of the retained update with this id.
func (ru *retainedUpdates) byUpdateID(id string) (uint64, bool) {
	return ru.byID.get(ru.hashStr(id), id, func(o uint64) bool { return ru.updateIDIs(o, id) })
}

// byPreparedID returns the sequence number of the retained update of this prepared id.
func (ru *retainedUpdates) byPreparedID(id string) (uint64, bool) {
	if id == "" {
		return 0, false
	}
	return ru.byPrep.get(ru.hashStr(id), id, func(o uint64) bool { return ru.preparedIDIs(o, id) })
}

// byChange returns the sequence number of the retained update of actAs's command id.
func (ru *retainedUpdates) byChange(actAs, commandID string) (uint64, bool) {
	seq, ok := ru.byCommand.m[ru.hashChange(actAs, commandID)]
	if ok && ru.changeIs(seq, actAs, commandID) {
		return seq, true
	}
	if len(ru.byCommand.over) == 0 {
		return 0, false
	}
	seq, ok = ru.byCommand.over[dedupKey(actAs, commandID)]
	return seq, ok
}

func (ru *retainedUpdates) hashStr(s string) uint64 { return maphash.String(ru.seed, s) & ru.mask }

func (ru *retainedUpdates) hashBytes(b []byte) uint64 { return maphash.Bytes(ru.seed, b) & ru.mask }

// hashChange hashes a change id as the bytes of dedupKey(actAs, commandID).
func (ru *retainedUpdates) hashChange(actAs, commandID string) uint64 {
	var h maphash.Hash
	h.SetSeed(ru.seed)
	h.WriteString(actAs)
	h.WriteByte(0)
	h.WriteString(commandID)
	return h.Sum64() & ru.mask
}

// hashChangeBytes is hashChange of a command id read from an encoding.
func (ru *retainedUpdates) hashChangeBytes(actAs string, commandID []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(ru.seed)
	h.WriteString(actAs)
	h.WriteByte(0)
	h.Write(commandID)
	return h.Sum64() & ru.mask
}

// changeIs reports whether update seq is actAs's command commandID.
func (ru *retainedUpdates) changeIs(seq uint64, actAs, commandID string) bool {
	s := ru.slot(seq)
	if ru.syms[s.actAs] != actAs {
		return false
	}
	c, _ := readRetStr(ru.bytes(s))
	return string(c) == commandID
}

// updateIDIs reports whether update seq has this update id.
func (ru *retainedUpdates) updateIDIs(seq uint64, id string) bool {
	b := ru.bytes(ru.slot(seq))
	_, b = readRetStr(b)
	return retIDIs(b, id)
}

// preparedIDIs reports whether update seq executed this prepared id.
func (ru *retainedUpdates) preparedIDIs(seq uint64, id string) bool {
	b := ru.bytes(ru.slot(seq))
	_, b = readRetStr(b)
	b = skipRetID(b)
	return retIDIs(b, id)
}

// update returns the retained update seq, in a new Update of its own.
func (ru *retainedUpdates) update(seq uint64) Update {
	var u Update
	ru.decode(ru.slot(seq), &u, true)
	return u
}

// keys returns the retained update seq without its kind and lists: its ids, offset,
// acting party and record time (what a completion reports).
func (ru *retainedUpdates) keys(seq uint64) Update {
	var u Update
	s := ru.slot(seq)
	ru.decode(s, &u, false)
	u.RecordTime = s.recordTime()
	return u
}

// decode reads slot s's update into u. With lists false only the keys are read: update id,
// command id, prepared id and act-as.
func (ru *retainedUpdates) decode(s *retainedSlot, u *Update, lists bool) {
	b := ru.bytes(s)
	var c []byte
	c, b = readRetStr(b)
	u.CommandID = string(c)
	u.UpdateID, b = readRetID(b)
	u.PreparedID, b = readRetID(b)
	u.ActAs = ru.syms[s.actAs]
	u.Offset = s.offset
	if !lists {
		return
	}
	k, n := binary.Uvarint(b)
	b = b[n:]
	u.Kind = CommandKind(ru.syms[k])
	u.RecordTime = s.recordTime()
	var all []string
	if n := countRetIDs(b); n > 0 {
		all = make([]string, 0, n) // the four lists share one array, as Update.clone's
	}
	u.Created, b = readRetIDs(b, &all)
	u.Archived, b = readRetIDs(b, &all)
	u.Allocation, b = readRetID(b)
	u.TransferInstruction, b = readRetID(b)
	u.Preapproval, b = readRetID(b)
	u.Receipts, b = readRetIDs(b, &all)
	u.Released, _ = readRetIDs(b, &all)
}

// put files seq under key, whose hash is h; same reports whether another update holds
// key, text returns key (only called on a collision).
func (x *keyIndex) put(h, seq uint64, same func(uint64) bool, text func() string) {
	if old, ok := x.m[h]; ok && !same(old) {
		if x.over == nil {
			x.over = map[string]uint64{}
		}
		x.over[text()] = seq
		return
	}
	x.m[h] = seq
}

func (x *keyIndex) get(h uint64, key string, same func(uint64) bool) (uint64, bool) {
	if seq, ok := x.m[h]; ok && same(seq) {
		return seq, true
	}
	if len(x.over) == 0 {
		return 0, false
	}
	seq, ok := x.over[key]
	return seq, ok
}

// del removes the entry of key (whose hash is h) if it names seq; key may be nil when the
// caller looks in over itself (delOver).
func (x *keyIndex) del(h, seq uint64, key []byte) {
	if len(x.over) > 0 && key != nil {
		if s, ok := x.over[string(key)]; ok && s == seq {
			delete(x.over, string(key))
			return
		}
	}
	if s, ok := x.m[h]; ok && s == seq {
		delete(x.m, h)
	}
}

// delOver removes key's entry from over if it names seq.
func (x *keyIndex) delOver(key string, seq uint64) {
	if s, ok := x.over[key]; ok && s == seq {
		delete(x.over, key)
	}
}

// ---- the encoding of a retained update's ids ----

// Forms of an id in a retained update's encoding.
const (
	retEmpty    byte = iota // ""
	retText                 // any other string: uvarint length and bytes
	retContract             // "00" + 64 lower-case hex digits: the 32 bytes
	retUpdate               // "1220" + 64 lower-case hex digits: the 32 bytes
	retPrepared             // "prep-" + 32 lower-case hex digits: the 16 bytes
)

// retForm returns the form of id and, for the compact forms, the hex digits.
func retForm(id string) (form byte, digits string, raw int) {
	switch {
	case id == "":
		return retEmpty, "", 0
	case len(id) == 66 && id[:2] == "00":
		return retContract, id[2:], 32
	case len(id) == 68 && id[:4] == "1220":
		return retUpdate, id[4:], 32
	case len(id) == 37 && id[:5] == "prep-":
		return retPrepared, id[5:], 16
	}
	return retText, "", 0
}

var retPrefix = [...]string{retContract: "00", retUpdate: "1220", retPrepared: "prep-"}

func appendRetStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readRetStr(b []byte) (s, rest []byte) {
	n, k := binary.Uvarint(b)
	return b[k : k+int(n)], b[k+int(n):]
}

func appendRetID(b []byte, id string) []byte {
	form, digits, raw := retForm(id)
	if raw > 0 {
		var buf [32]byte
		if decodeLowerHex(buf[:raw], digits) {
			b = append(b, form)
			return append(b, buf[:raw]...)
		}
		form = retText
	}
	b = append(b, form)
	if form == retText {
		b = appendRetStr(b, id)
	}
	return b
}

func retIDLen(form byte) int {
	switch form {
	case retContract, retUpdate:
		return 32
	case retPrepared:
		return 16
	}
	return 0
}

func readRetID(b []byte) (string, []byte) {
	form := b[0]
	b = b[1:]
	switch form {
	case retEmpty:
		return "", b
	case retText:
		s, rest := readRetStr(b)
		return string(s), rest
	}
	n := retIDLen(form)
	return hexID(retPrefix[form], b[:n]), b[n:]
}

// appendRetIDText appends the text of the id at the start of b to dst.
func appendRetIDText(dst, b []byte) (text, rest []byte) {
	form := b[0]
	b = b[1:]
	switch form {
	case retEmpty:
		return dst, b
	case retText:
		s, rest := readRetStr(b)
		return append(dst, s...), rest
	}
	n := retIDLen(form)
	dst = append(dst, retPrefix[form]...)
	return hex.AppendEncode(dst, b[:n]), b[n:]
}

func skipRetID(b []byte) []byte {
	form := b[0]
	b = b[1:]
	switch form {
	case retEmpty:
		return b
	case retText:
		_, rest := readRetStr(b)
		return rest
	}
	return b[retIDLen(form):]
}

// retIDIs reports whether the id at the start of b is id.
func retIDIs(b []byte, id string) bool {
	form := b[0]
	b = b[1:]
	switch form {
	case retEmpty:
		return id == ""
	case retText:
		s, _ := readRetStr(b)
		return string(s) == id
	}
	p := retPrefix[form]
	n := retIDLen(form)
	if len(id) != len(p)+2*n || id[:len(p)] != p {
		return false
	}
	var buf [64]byte
	hex.Encode(buf[:], b[:n])
	return string(buf[:2*n]) == id[len(p):]
}

func appendRetIDs(b []byte, ids []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendRetID(b, id)
	}
	return b
}

func readRetIDs(b []byte, all *[]string) ([]string, []byte) {
	n, k := binary.Uvarint(b)
	b = b[k:]
	if n == 0 {
		return nil, b
	}
	start := len(*all)
	for range n {
		var id string
		id, b = readRetID(b)
		*all = append(*all, id)
	}
	a := *all
	return a[start:len(a):len(a)], b
}

// countRetIDs counts the entries of the four lists of an encoding that starts with the
// Created list (the three single ids between Archived and Receipts are skipped).
func countRetIDs(b []byte) int {
	total := 0
	for i := range 4 {
		if i == 2 {
			b = skipRetID(skipRetID(skipRetID(b)))
		}
		n, k := binary.Uvarint(b)
		b = b[k:]
		total += int(n)
		for range n {
			b = skipRetID(b)
		}
	}
	return total
}

// ---- snapshots ----

// writeSnapshot writes the retained update of slot s as the snapshot encoding has it
// (ENCODING.md, "Snapshots"), the same bytes as writing the Update's fields, without
// making its strings.
func (ru *retainedUpdates) writeSnapshot(w *snapWriter, s *retainedSlot) {
	cmd, b := readRetStr(ru.bytes(s))
	b = writeSnapID(w, b) // update id
	w.Varint(s.offset)
	w.Uvarint(uint64(len(cmd))) // as w.Str
	w.Raw(cmd)
	b = writeSnapID(w, b) // prepared id
	w.sym(ru.syms[s.actAs])
	k, n := binary.Uvarint(b)
	b = b[n:]
	w.sym(ru.syms[k])
	w.Time(s.recordTime())
	b = writeSnapIDs(w, b) // Created
	b = writeSnapIDs(w, b) // Archived
	b = writeSnapID(w, b)  // Allocation
	b = writeSnapID(w, b)  // TransferInstruction
	b = writeSnapID(w, b)  // Preapproval
	b = writeSnapIDs(w, b) // Receipts
	writeSnapIDs(w, b)     // Released
}

// writeSnapID writes the id at the start of b as snapWriter.cid writes its text, and
// returns the rest of b.
func writeSnapID(w *snapWriter, b []byte) []byte {
	form := b[0]
	b = b[1:]
	switch form {
	case retEmpty:
		w.U8(idText)
		w.Uvarint(0)
		return b
	case retText:
		// Text the retained form keeps as text is text to cid as well: it is neither of
		// cid's compact forms, which retForm tries first with the same tests.
		s, rest := readRetStr(b)
		w.U8(idText)
		w.Uvarint(uint64(len(s)))
		w.Raw(s)
		return rest
	case retContract:
		w.U8(idContract)
		w.Raw(b[:32])
		return b[32:]
	case retUpdate:
		w.U8(idUpdate)
		w.Raw(b[:32])
		return b[32:]
	}
	// retPrepared: text to cid, "prep-" and the hex digits.
	w.U8(idText)
	w.Uvarint(uint64(len(retPrefix[retPrepared]) + 32))
	w.RawStr(retPrefix[retPrepared])
	w.B = hex.AppendEncode(w.B, b[:16])
	return b[16:]
}

func writeSnapIDs(w *snapWriter, b []byte) []byte {
	n, k := binary.Uvarint(b)
	b = b[k:]
	w.Uvarint(n)
	for range n {
		b = writeSnapID(w, b)
	}
	return b
}
