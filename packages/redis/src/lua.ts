/**
 * The Lua scripts the store runs: one per store call, each touching the keys of one thread only (one
 * hash tag, so one cluster slot), each atomic. Every key a script touches is derived from `KEYS[1]`,
 * the thread's base key, so a client-side `keyPrefix` (ioredis) applies to all of them.
 *
 * Layout under the base `B` (see keys.ts for the encoding of `<ns>`):
 *
 * - `B:m` hash: `ix`, the token of this thread's entry in the global thread index.
 * - `B:n` sorted set (lexicographic): the thread's namespaces, encoded.
 * - `B:k` hash: chunks, `<hash>\0<index>` -> bytes, and `<hash>` -> highest index + 1.
 * - `B:c:<ns>` sorted set: checkpoint records, members `<checkpoint id>\0<packed record>`.
 * - `B:b:<ns>` sorted set: blobs, members `<channel>\0<version>\0<packed value>`.
 * - `B:w:<ns>` sorted set: pending writes, members `<checkpoint id>\0<task id>\0<idx>\0<packed value>`.
 * - `B:s` hash: the thread's status: `st` state, `cp` checkpoint id, `u` updatedAt (ms), `a` attempts,
 *   `e` error, `at` attemptedAt, and `i:<task id>` -> that task's interrupts as JSON text (kept as
 *   text, never decoded by Lua: cjson would turn `[]` into `{}` and round numbers).
 * - `B:l` hash: the thread's lease: `t` fencing token, `w` worker, `e` expiresAt (ms, by `TIME`), `r`
 *   released ("1"). It outlives `deleteThread` and the thread's TTL, so tokens only grow.
 *
 * The status index `X` (`<prefix>{<prefix>:status}`, one fixed hash tag, so one slot): `X:<state>`
 * sorted sets, score updatedAt, member `<thread id>\0<updatedAt>` (so equal scores order by thread id,
 * and in Cluster a stale entry never shadows the current one). On a standalone server the scripts that
 * change a status get `X` as `KEYS[2]` and move the entry themselves, atomically; on a Cluster `X` is
 * another slot, so the store moves it with commands of its own around the script (see redis-store.ts).
 *
 * Ids never contain NUL, so `[x\0` .. `(x\1` selects exactly the members whose leading parts are `x`,
 * and `[ch\0root\0` .. `(ch\0version\1` exactly the versions `root <= v <= version` (byte order, which
 * is code point order for UTF-8). A packed value is `<refs, comma-separated>\n<JSON header>\n<bytes>`.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** A script with its SHA-1, for EVALSHA. */
export interface LuaScript {
  name: string;
  lua: string;
  sha: string;
}

const COMMON = `
local B = KEYS[1]
local M, N, K = B .. ':m', B .. ':n', B .. ':k'
local SEP = '\\0'
local function cKey(ns) return B .. ':c:' .. ns end
local function bKey(ns) return B .. ':b:' .. ns end
local function wKey(ns) return B .. ':w:' .. ns end
local function exact(key, p)
  return redis.call('ZRANGEBYLEX', key, '[' .. p .. SEP, '(' .. p .. '\\1', 'LIMIT', 0, 1)[1]
end
-- Position just after the n-th NUL of s.
local function after(s, n)
  local pos = 0
  for _ = 1, n do pos = string.find(s, SEP, pos + 1, true) end
  return pos + 1
end
-- The refs line of a packed value starting at from: appends its hashes; returns the next position.
local function refs(s, from, out)
  local nl = string.find(s, '\\n', from, true)
  if nl > from then for h in string.gmatch(string.sub(s, from, nl - 1), '[^,]+') do out[#out + 1] = h end end
  return nl + 1
end
local function headerAt(s, from)
  local nl = string.find(s, '\\n', from, true)
  return string.sub(s, from, nl - 1)
end
-- A record member: id, decoded header, header text; its refs go to out.
local function record(m, out)
  local s = string.find(m, SEP, 1, true)
  local from = refs(m, s + 1, out or {})
  local text = headerAt(m, from)
  return string.sub(m, 1, s - 1), cjson.decode(text), text
end
local function blobsOf(b, ch, ver, root)
  if root then return redis.call('ZRANGEBYLEX', b, '[' .. ch .. SEP .. root .. SEP, '(' .. ch .. SEP .. ver .. '\\1') end
  return redis.call('ZRANGEBYLEX', b, '[' .. ch .. SEP .. ver .. SEP, '(' .. ch .. SEP .. ver .. '\\1', 'LIMIT', 0, 1)
end
local function chunks(hashes)
  local out, seen = {}, {}
  for _, h in ipairs(hashes) do
    if not seen[h] then
      seen[h] = true
      local n = tonumber(redis.call('HGET', K, h) or '0')
      local i = 0
      while i < n do
        local fields = {}
        for j = i, math.min(n, i + 500) - 1 do fields[#fields + 1] = h .. SEP .. j end
        local vals = redis.call('HMGET', K, unpack(fields))
        for j = 1, #fields do if vals[j] then out[#out + 1] = {h, i + j - 1, vals[j]} end end
        i = i + 500
      end
    end
  end
  return out
end
local function putChunk(h, idx, data)
  if redis.call('HSETNX', K, h .. SEP .. idx, data) == 1 then
    local n = tonumber(redis.call('HGET', K, h) or '0')
    if tonumber(idx) + 1 > n then redis.call('HSET', K, h, tonumber(idx) + 1) end
  end
end
local S, L = B .. ':s', B .. ':l'
-- Sequential reading of ARGV: args(n) returns the next n arguments.
local argi = 0
local function args(n)
  local t = {}
  for k = 1, n do t[k] = ARGV[argi + k] end
  argi = argi + n
  return unpack(t, 1, n)
end
-- Byte order, as Redis orders members (Lua's own < on strings follows the server's locale).
local function lt(a, b)
  local n = math.min(#a, #b)
  for k = 1, n do
    local x, y = string.byte(a, k), string.byte(b, k)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n) return string.format('%d', n) end
-- nil when the lease still carries the token (or there is no fence), else the refusal to return.
local function fenceLost(token)
  if token == '' then return nil end
  local cur = redis.call('HMGET', L, 't', 'w', 'r')
  if cur[1] == token and cur[3] ~= '1' then return nil end
  return {-1, cur[1] or '', cur[2] or '', cur[3] or ''}
end
local function statusNow()
  local v = redis.call('HMGET', S, 'st', 'u', 'cp')
  return v[1], v[2], v[3]
end
local function clearInterrupts()
  local del = {}
  for _, f in ipairs(redis.call('HKEYS', S)) do if string.sub(f, 1, 2) == 'i:' then del[#del + 1] = f end end
  if #del > 0 then redis.call('HDEL', S, unpack(del)) end
end
-- Standalone only (KEYS[2] is the status index): moves the thread's entry from (oldSt, oldU) to (newSt, newU).
local function reindex(thread, oldSt, oldU, newSt, newU)
  local X = KEYS[2]
  if not X then return end
  if oldSt and (oldSt ~= newSt or oldU ~= newU) then redis.call('ZREM', X .. ':' .. oldSt, thread .. SEP .. oldU) end
  if newSt then redis.call('ZADD', X .. ':' .. newSt, newU, thread .. SEP .. newU) end
end
-- A root put's status (ARGV from argi: state or '', updatedAt, error flag, error, thread, n, (task, json)*):
-- replaces the record unless it names a later checkpoint. Returns applied (0|1), old state, old updatedAt.
local function putStatus(id)
  local state, u, ef, err, thread, n = args(6)
  local pairsList = {}
  for k = 1, tonumber(n) do local t, j = args(2); pairsList[k] = {t, j} end
  if state == '' then return 0 end
  local oldSt, oldU, oldCp = statusNow()
  if oldCp and lt(id, oldCp) then return 0, oldSt, oldU end
  clearInterrupts()
  redis.call('HDEL', S, 'e', 'at')
  local f = {'st', state, 'cp', id, 'u', u, 'a', '0'}
  if ef == '1' then f[#f + 1] = 'e'; f[#f + 1] = err end
  for _, p in ipairs(pairsList) do f[#f + 1] = 'i:' .. p[1]; f[#f + 1] = p[2] end
  redis.call('HSET', S, unpack(f))
  reindex(thread, oldSt, oldU, state, u)
  return 1, oldSt, oldU
end
-- A status patch (ARGV from argi: checkpoint id, state or '', error mode 0|1|2, error, interrupts mode
-- 0|1|2, n, (task, json or '' to remove)*, add attempts, attemptedAt or '', updatedAt, thread), applied
-- only when the record describes that checkpoint. Returns applied (0|1), old state, old updatedAt, new state.
local function patchStatus()
  local cp, state, em, err, im, n = args(6)
  local pairsList = {}
  for k = 1, tonumber(n) do local t, j = args(2); pairsList[k] = {t, j} end
  local add, at, u, thread = args(4)
  local oldSt, oldU, oldCp = statusNow()
  if not oldCp or oldCp ~= cp then return 0, oldSt, oldU end
  local f = {'u', u}
  local newSt = oldSt
  if state ~= '' then f[#f + 1] = 'st'; f[#f + 1] = state; newSt = state end
  if em == '1' then f[#f + 1] = 'e'; f[#f + 1] = err elseif em == '2' then redis.call('HDEL', S, 'e') end
  if im == '2' then clearInterrupts() elseif im == '1' then
    for _, p in ipairs(pairsList) do
      if p[2] == '' then redis.call('HDEL', S, 'i:' .. p[1]) else f[#f + 1] = 'i:' .. p[1]; f[#f + 1] = p[2] end
    end
  end
  if at ~= '' then f[#f + 1] = 'at'; f[#f + 1] = at end
  redis.call('HSET', S, unpack(f))
  if tonumber(add) ~= 0 then redis.call('HINCRBY', S, 'a', add) end
  reindex(thread, oldSt, oldU, newSt, u)
  return 1, oldSt, oldU, newSt
end
-- Gives every key of the thread the same absolute expiry: the new TTL, or the one the thread has, so
-- that it never expires in part (keys of a new namespace get it too).
local function refresh(ttl)
  local now = nowMs()
  local at
  if ttl > 0 then at = now + ttl else
    local left = redis.call('PTTL', M)
    if left > 0 then at = now + left end
  end
  if not at then return end
  local keys = {M, N, K, S}
  for _, ns in ipairs(redis.call('ZRANGE', N, 0, -1)) do
    keys[#keys + 1] = cKey(ns); keys[#keys + 1] = bKey(ns); keys[#keys + 1] = wKey(ns)
  end
  for _, k in ipairs(keys) do redis.call('PEXPIREAT', k, at) end
end
-- One checkpoint with the blobs of its versions (delta ranges whole) and its writes; hashes collects
-- the pieces they reference.
local function readCheckpoint(ns, m, hashes)
  local id, h = record(m, hashes)
  local b = bKey(ns)
  local blobs = {}
  local roots = h.dr or {}
  for ch, ver in pairs(h.v) do
    for _, x in ipairs(blobsOf(b, ch, ver, roots[ch])) do
      blobs[#blobs + 1] = x
      refs(x, after(x, 2), hashes)
    end
  end
  local writes = redis.call('ZRANGEBYLEX', wKey(ns), '[' .. id .. SEP, '(' .. id .. '\\1')
  for _, x in ipairs(writes) do refs(x, after(x, 3), hashes) end
  return {m, blobs, writes}
end
`;

/**
 * ARGV: fence token ('' for none), mode (check|mark), token, ttl ms, ns, checkpoint id, packed record,
 * n chunks, (hash, idx, bytes)*, n blobs, (channel, version, packed)*, then the status of a root put
 * (see putStatus; state '' for none). The fence is read before anything is written: a refused put
 * writes nothing. Returns {result (0: not indexed yet, 1, 2: indexed by another call), status applied,
 * old state, old updatedAt}, or {-1, current token, holder, released} when the fence failed.
 */
const PUT_CHECKPOINT = `
local fence, mode, token, ttl = args(4)
local lost = fenceLost(fence)
if lost then return lost end
local result = 1
if redis.call('HEXISTS', M, 'ix') == 0 then
  if mode == 'check' then return {0} end
  redis.call('HSET', M, 'ix', token)
elseif mode == 'mark' and redis.call('HGET', M, 'ix') ~= token then
  result = 2
end
local ns, id, rec = args(3)
for _ = 1, tonumber(args(1)) do putChunk(args(3)) end
local b = bKey(ns)
for _ = 1, tonumber(args(1)) do
  local ch, ver, packed = args(3)
  local p = ch .. SEP .. ver
  if not exact(b, p) then redis.call('ZADD', b, 0, p .. SEP .. packed) end
end
local c = cKey(ns)
local old = redis.call('ZRANGEBYLEX', c, '[' .. id .. SEP, '(' .. id .. '\\1')
if #old > 0 then redis.call('ZREM', c, unpack(old)) end
redis.call('ZADD', c, 0, id .. SEP .. rec)
redis.call('ZADD', N, 0, ns)
local applied, oldSt, oldU = putStatus(id)
refresh(tonumber(ttl))
return {result, applied, oldSt or '', oldU or ''}
`;

/**
 * ARGV: fence token ('' for none), ttl ms, mode (upsert|ignore), ns, checkpoint id, n chunks,
 * (hash, idx, bytes)*, n writes, (task, idx, packed)*, has status (0|1), then the patch (see
 * patchStatus). Returns {1, status applied, old state, old updatedAt, new state}, or the fence's refusal.
 */
const PUT_WRITES = `
local fence, ttl, mode, ns, id = args(5)
local lost = fenceLost(fence)
if lost then return lost end
local upsert = mode == 'upsert'
for _ = 1, tonumber(args(1)) do putChunk(args(3)) end
local w = wKey(ns)
for _ = 1, tonumber(args(1)) do
  local task, idx, packed = args(3)
  local p = id .. SEP .. task .. SEP .. idx
  local old = redis.call('ZRANGEBYLEX', w, '[' .. p .. SEP, '(' .. p .. '\\1')
  if #old == 0 or upsert then
    if #old > 0 then redis.call('ZREM', w, unpack(old)) end
    redis.call('ZADD', w, 0, p .. SEP .. packed)
  end
end
redis.call('ZADD', N, 0, ns)
local applied, oldSt, oldU, newSt = 0, nil, nil, nil
if args(1) == '1' then applied, oldSt, oldU, newSt = patchStatus() end
refresh(tonumber(ttl))
return {1, applied, oldSt or '', oldU or '', newSt or ''}
`;

/** ARGV: ns, checkpoint id ('' for the newest). Returns {indexed, {record, blobs, writes}?, chunks?}. */
const GET_CHECKPOINT = `
local ns, id = ARGV[1], ARGV[2]
local c = cKey(ns)
local m
if id == '' then m = redis.call('ZREVRANGEBYLEX', c, '+', '-', 'LIMIT', 0, 1)[1] else m = exact(c, id) end
local indexed = redis.call('HEXISTS', M, 'ix')
if not m then return {indexed} end
local hashes = {}
local item = readCheckpoint(ns, m, hashes)
return {indexed, item, chunks(hashes)}
`;

/**
 * ARGV: mode (one|all), ns to start at, exclusive (0|1), checkpoint id to continue below ('' for the
 * top), before ('' for none), only this checkpoint id ('' for any), page size, page bytes, scan
 * budget, then filter pairs (key as JSON text, value as canonical JSON text or '' for "absent").
 * Returns {done, ns, exclusive, continue below, {{ns, {record, blobs, writes}}...}, chunks}.
 */
const LIST = `
local mode, startNs, excl, below, before, only = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5], ARGV[6]
local pageSize, pageBytes, budget = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local filter = {}
for i = 10, #ARGV, 2 do filter[#filter + 1] = {ARGV[i], ARGV[i + 1]} end
local function matches(h)
  if #filter == 0 then return true end
  local md = {}
  local mk = h.mk or {}
  for i = 1, #mk, 2 do md[mk[i]] = mk[i + 1] end
  for _, f in ipairs(filter) do
    local v = md[f[1]]
    if f[2] == '' then if v ~= nil then return false end elseif v ~= f[2] then return false end
  end
  return true
end
local items, hashes, bytes, scanned = {}, {}, 0, 0
local function finish(done, ns, ex, cont) return {done, ns, ex, cont, items, chunks(hashes)} end
local NSPAGE = 100
local nss
if mode == 'one' then nss = {startNs}
else
  local min = '-'
  if excl then min = '(' .. startNs elseif startNs ~= '' then min = '[' .. startNs end
  nss = redis.call('ZRANGEBYLEX', N, min, '+', 'LIMIT', 0, NSPAGE)
end
for n, ns in ipairs(nss) do
  local c = cKey(ns)
  local max = '+'
  if n == 1 and below ~= '' then max = '(' .. below .. SEP elseif before ~= '' then max = '(' .. before .. SEP end
  while true do
    local batch
    if only ~= '' then batch = {exact(c, only)} else batch = redis.call('ZREVRANGEBYLEX', c, max, '-', 'LIMIT', 0, 32) end
    for _, m in ipairs(batch) do
      scanned = scanned + 1
      local id, h = record(m)
      if matches(h) then
        local item = readCheckpoint(ns, m, hashes)
        bytes = bytes + #m
        for _, x in ipairs(item[2]) do bytes = bytes + #x end
        for _, x in ipairs(item[3]) do bytes = bytes + #x end
        items[#items + 1] = {ns, item}
      end
      if only == '' and (#items >= pageSize or bytes >= pageBytes or scanned >= budget) then return finish(0, ns, '0', id) end
      max = '(' .. id .. SEP
    end
    if only ~= '' or #batch < 32 then break end
  end
  if #items >= pageSize and n < #nss then return finish(0, nss[n + 1], '0', '') end
end
if mode == 'all' and #nss == NSPAGE then return finish(0, nss[#nss], '1', '') end
return finish(1, '', '0', '')
`;

/**
 * ARGV: ns, checkpoint id, channels... Walks the parent chain from the checkpoint's parent until every
 * channel has a non-empty blob at its version. Returns {{{id, header, blobs, writes}...}, chunks}.
 */
const GET_HISTORY = `
local ns, id = ARGV[1], ARGV[2]
local c, b, w = cKey(ns), bKey(ns), wKey(ns)
local wanted, unseeded, left = {}, {}, 0
for i = 3, #ARGV do
  if not wanted[ARGV[i]] then wanted[ARGV[i]] = true; unseeded[ARGV[i]] = true; left = left + 1 end
end
local out, hashes, seen = {}, {}, {}
local first = exact(c, id)
if not first then return {out, {}} end
local _, h = record(first)
local cur = h.p
while cur and left > 0 and not seen[cur] do
  seen[cur] = true
  local m = exact(c, cur)
  if not m then break end
  local aid, ah, text = record(m)
  local blobs, writes = {}, {}
  local roots = ah.dr or {}
  for ch, _ in pairs(wanted) do
    local ver = ah.v[ch]
    if ver then
      for _, x in ipairs(blobsOf(b, ch, ver, roots[ch])) do
        blobs[#blobs + 1] = x
        local s2 = after(x, 2)
        local hfrom = refs(x, s2, hashes)
        if unseeded[ch] and string.sub(x, after(x, 1), s2 - 2) == ver and cjson.decode(headerAt(x, hfrom)).t ~= 'empty' then
          unseeded[ch] = nil; left = left - 1
        end
      end
    end
  end
  for _, x in ipairs(redis.call('ZRANGEBYLEX', w, '[' .. aid .. SEP, '(' .. aid .. '\\1')) do
    local hfrom = refs(x, after(x, 3), {})
    if wanted[cjson.decode(headerAt(x, hfrom)).ch] then
      writes[#writes + 1] = x
      refs(x, after(x, 3), hashes)
    end
  end
  out[#out + 1] = {aid, text, blobs, writes}
  cur = ah.p
end
return {out, chunks(hashes)}
`;

/** ARGV: ns, (channel, version)*. */
const GET_BLOBS = `
local b = bKey(ARGV[1])
local out = {}
for i = 2, #ARGV, 2 do
  local x = exact(b, ARGV[i] .. SEP .. ARGV[i + 1])
  if x then out[#out + 1] = x end
end
return out
`;

/** ARGV: hashes. */
const GET_CHUNKS = `
local hashes = {}
for i = 1, #ARGV do hashes[#hashes + 1] = ARGV[i] end
return chunks(hashes)
`;

/**
 * ARGV: thread id. Deletes every key of the thread but its lease (whose token must keep growing);
 * returns {index token or '', status state or '', status updatedAt or ''}.
 */
const DELETE_THREAD = `
local token = redis.call('HGET', M, 'ix')
local st, u = statusNow()
reindex(ARGV[1], st, u, nil, nil)
local keys = {M, N, K, S}
for _, ns in ipairs(redis.call('ZRANGE', N, 0, -1)) do
  keys[#keys + 1] = cKey(ns); keys[#keys + 1] = bKey(ns); keys[#keys + 1] = wKey(ns)
end
for i = 1, #keys, 500 do redis.call('DEL', unpack(keys, i, math.min(#keys, i + 499))) end
return {token or '', st or '', u or ''}
`;

/**
 * ARGV: worker, ttl ms. Takes a free lease (never claimed, released, expired by the server's clock) or
 * the worker's own, with the thread's last token plus one. Returns {token, expiresAt} or false.
 */
const CLAIM_LEASE = `
local worker, ttl = ARGV[1], tonumber(ARGV[2])
local now = nowMs()
local cur = redis.call('HMGET', L, 't', 'w', 'e', 'r')
if cur[1] and cur[4] ~= '1' and cur[2] ~= worker and tonumber(cur[3]) > now then return false end
local token = tonumber(cur[1] or '0') + 1
local expires = now + ttl
redis.call('HSET', L, 't', int(token), 'w', worker, 'e', int(expires), 'r', '0')
return {int(token), int(expires)}
`;

/** ARGV: token, ttl ms. Returns {1, worker, expiresAt}, or the fence's refusal. */
const RENEW_LEASE = `
local lost = fenceLost(ARGV[1])
if lost then return lost end
local expires = nowMs() + tonumber(ARGV[2])
redis.call('HSET', L, 'e', int(expires))
return {1, redis.call('HGET', L, 'w'), int(expires)}
`;

/** ARGV: token. Marks the lease released when it is still the thread's current one. */
const RELEASE_LEASE = `
if redis.call('HGET', L, 't') ~= ARGV[1] then return 0 end
redis.call('HSET', L, 'r', '1')
return 1
`;

/**
 * ARGV: fence token ('' for none), then the patch (see patchStatus). Returns {1, applied, old state,
 * old updatedAt, new state, the record's fields as HGETALL gives them}, or the fence's refusal.
 */
const PATCH_STATUS = `
local lost = fenceLost(args(1))
if lost then return lost end
local applied, oldSt, oldU, newSt = patchStatus()
local record = {}
if applied == 1 then record = redis.call('HGETALL', S) end
return {1, applied, oldSt or '', oldU or '', newSt or '', record}
`;

/** ARGV: token. Whether the thread exists with this index token (1), exists with another (2), or not at all (0). */
const INDEX_STATE = `
local token = redis.call('HGET', M, 'ix')
if not token then return 0 end
if token == ARGV[1] then return 1 end
return 2
`;

/**
 * On the status index (KEYS[1] = `X`). ARGV: n removes, (state, member)*, n adds, (state, score, member)*.
 * The Cluster's index moves, before and after a status-changing script on the thread's slot.
 */
const STATUS_INDEX = `
local X = KEYS[1]
local i = 1
for _ = 1, tonumber(ARGV[i]) do redis.call('ZREM', X .. ':' .. ARGV[i + 1], ARGV[i + 2]); i = i + 2 end
i = i + 1
for _ = 1, tonumber(ARGV[i]) do redis.call('ZADD', X .. ':' .. ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 3 end
return 1
`;

/**
 * A page of the status index (KEYS[1] = `X`): entries of the given states in (updatedAt, thread id)
 * order after a cursor, older than a bound. ARGV: limit, olderThan or '', cursor updatedAt or '',
 * cursor thread id, read back (1: standalone, where the script reads each thread's record itself;
 * 0: Cluster, where the records live in other slots), the suffix of `X` after the key prefix, states...
 *
 * Each state is one ZRANGEBYSCORE of at most `limit` entries (entries at the cursor's own score that
 * sort before it are skipped), merged. Standalone: each entry is read back; an entry whose thread
 * has no status any more (it expired with ttlSeconds) is removed on the spot, and the page goes on
 * until it holds `limit` records. Returns {done, {state, score, member, record fields?}*}.
 */
const LIST_STATUS = `
local X = KEYS[1]
local limit = tonumber(ARGV[1])
local maxScore = '+inf'
if ARGV[2] ~= '' then maxScore = '(' .. ARGV[2] end
local cs, csText, ct = nil, ARGV[3], ARGV[4]
if csText ~= '' then cs = tonumber(csText) end
local readback, suffix = ARGV[5] == '1', ARGV[6]
local prefix = string.sub(X, 1, #X - #suffix)
local function enc(s)
  return (string.gsub(s, '[%%{}:%*%?%[%]\\\\]', function(ch) return string.format('%%%02X', string.byte(ch)) end))
end
local function candidates()
  local all = {}
  for s = 7, #ARGV do
    local state = ARGV[s]
    local key = X .. ':' .. state
    local min = '-inf'
    if cs then min = csText end
    local got, offset = 0, 0
    while got < limit do
      local batch = redis.call('ZRANGEBYSCORE', key, min, maxScore, 'WITHSCORES', 'LIMIT', offset, limit)
      for k = 1, #batch, 2 do
        local m, sc = batch[k], tonumber(batch[k + 1])
        local t = string.sub(m, 1, string.find(m, SEP, 1, true) - 1)
        if not (cs and sc == cs and not lt(ct, t)) then
          all[#all + 1] = {sc, t, m, state, batch[k + 1]}
          got = got + 1
          if got >= limit then break end
        end
      end
      if #batch < 2 * limit then break end
      offset = offset + limit
    end
  end
  table.sort(all, function(a, b) if a[1] ~= b[1] then return a[1] < b[1] end return lt(a[2], b[2]) end)
  return all
end
local out = {}
while true do
  local all = candidates()
  local n = math.min(#all, limit)
  -- Never end between entries of one thread at one score (a stale entry in one state, the current one
  -- in another): the next cursor, (score, thread), would skip the rest of them.
  while n > 0 and n < #all and all[n + 1][1] == all[n][1] and all[n + 1][2] == all[n][2] do n = n + 1 end
  if not readback then
    for k = 1, n do out[#out + 1] = {all[k][4], all[k][5], all[k][3]} end
    return {#all < limit and 1 or 0, out}
  end
  for k = 1, n do
    local e = all[k]
    cs, csText, ct = e[1], e[5], e[2]
    local rec = redis.call('HGETALL', prefix .. '{' .. enc(e[2]) .. '}:s')
    if #rec == 0 then
      redis.call('ZREM', X .. ':' .. e[4], e[3])
    else
      local st, u
      for f = 1, #rec, 2 do
        if rec[f] == 'st' then st = rec[f + 1] elseif rec[f] == 'u' then u = rec[f + 1] end
      end
      if st == e[4] and tonumber(u) == e[1] then
        out[#out + 1] = {e[4], e[5], e[3], rec}
        if #out >= limit then return {0, out} end
      end
    end
  end
  if #all < limit then return {1, out} end
end
`;

/**
 * Every record of the thread, for retention, in one script (one snapshot). Returns
 * {{{ns, {record members}, {blob heads}, {blob data lengths}, {write heads}, {write data lengths}}...},
 * {chunk field, byte length}*}: a head is a member up to the end of its header line, without its bytes.
 */
const THREAD_RECORDS = `
local function heads(key, parts, hs, lens)
  for _, x in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    local from = after(x, parts)
    local nl = string.find(x, '\\n', from, true)
    local hl = string.find(x, '\\n', nl + 1, true)
    hs[#hs + 1] = string.sub(x, 1, hl)
    lens[#lens + 1] = #x - hl
  end
end
local out = {}
for _, ns in ipairs(redis.call('ZRANGE', N, 0, -1)) do
  local bh, bl, wh, wl = {}, {}, {}, {}
  heads(bKey(ns), 2, bh, bl)
  heads(wKey(ns), 3, wh, wl)
  out[#out + 1] = {ns, redis.call('ZRANGE', cKey(ns), 0, -1), bh, bl, wh, wl}
end
local chunkSizes = {}
for _, f in ipairs(redis.call('HKEYS', K)) do
  if string.find(f, SEP, 1, true) then
    chunkSizes[#chunkSizes + 1] = f
    chunkSizes[#chunkSizes + 1] = redis.call('HSTRLEN', K, f)
  end
end
return {out, chunkSizes}
`;

/**
 * Removes listed records of the thread, all in one script (so at once). ARGV: fence token ('' for
 * none), n checkpoints, (ns, id)*, n blobs, (ns, channel, version)*, n hashes, hash*, status mode
 * ('' keep, 'remove', 'replace'), then for 'replace' the checkpoint id and the status as putStatus
 * reads it, for 'remove' the thread id. A checkpoint goes with every write under its id; a chunk hash
 * with every index. Returns {1, old state, old updatedAt}, or the fence's refusal.
 */
const DELETE_RECORDS = `
local lost = fenceLost(args(1))
if lost then return lost end
local touched = {}
for _ = 1, tonumber(args(1)) do
  local ns, id = args(2)
  redis.call('ZREMRANGEBYLEX', cKey(ns), '[' .. id .. SEP, '(' .. id .. '\\1')
  redis.call('ZREMRANGEBYLEX', wKey(ns), '[' .. id .. SEP, '(' .. id .. '\\1')
  touched[ns] = true
end
for _ = 1, tonumber(args(1)) do
  local ns, ch, ver = args(3)
  redis.call('ZREMRANGEBYLEX', bKey(ns), '[' .. ch .. SEP .. ver .. SEP, '(' .. ch .. SEP .. ver .. '\\1')
  touched[ns] = true
end
for _ = 1, tonumber(args(1)) do
  local h = args(1)
  local n = tonumber(redis.call('HGET', K, h) or '0')
  local fields = {h}
  for i = 0, n - 1 do fields[#fields + 1] = h .. SEP .. i end
  for i = 1, #fields, 500 do redis.call('HDEL', K, unpack(fields, i, math.min(#fields, i + 499))) end
end
for ns, _ in pairs(touched) do
  if redis.call('EXISTS', cKey(ns), bKey(ns), wKey(ns)) == 0 then redis.call('ZREM', N, ns) end
end
local mode = args(1)
local oldSt, oldU = statusNow()
if mode == 'remove' then
  local thread = args(1)
  redis.call('DEL', S)
  reindex(thread, oldSt, oldU, nil, nil)
elseif mode == 'replace' then
  local id = args(1)
  local state, u, ef, err, thread, n = args(6)
  local f = {'st', state, 'cp', id, 'u', u, 'a', '0'}
  if ef == '1' then f[#f + 1] = 'e'; f[#f + 1] = err end
  for _ = 1, tonumber(n) do local t, j = args(2); f[#f + 1] = 'i:' .. t; f[#f + 1] = j end
  redis.call('DEL', S)
  redis.call('HSET', S, unpack(f))
  reindex(thread, oldSt, oldU, state, u)
  -- The new hash gets the expiry the thread's other keys have (ttlSeconds), never none.
  refresh(0)
end
return {1, oldSt or '', oldU or ''}
`;

function script(name: string, body: string): LuaScript {
  const lua = `${COMMON}\n${body}`;
  return { name, lua, sha: createHash("sha1").update(lua).digest("hex") };
}

/** Every script the store runs, by what it does. */
export const SCRIPTS = {
  putCheckpoint: script("putCheckpoint", PUT_CHECKPOINT),
  putWrites: script("putWrites", PUT_WRITES),
  getCheckpoint: script("getCheckpoint", GET_CHECKPOINT),
  list: script("listCheckpoints", LIST),
  getHistory: script("getHistory", GET_HISTORY),
  getBlobs: script("getBlobs", GET_BLOBS),
  getChunks: script("getChunks", GET_CHUNKS),
  deleteThread: script("deleteThread", DELETE_THREAD),
  indexState: script("indexState", INDEX_STATE),
  claimLease: script("claimLease", CLAIM_LEASE),
  renewLease: script("renewLease", RENEW_LEASE),
  releaseLease: script("releaseLease", RELEASE_LEASE),
  patchStatus: script("patchThreadStatus", PATCH_STATUS),
  statusIndex: script("statusIndex", STATUS_INDEX),
  listStatus: script("listThreads", LIST_STATUS),
  threadRecords: script("listThreadRecords", THREAD_RECORDS),
  deleteRecords: script("deleteRecords", DELETE_RECORDS),
} as const;
