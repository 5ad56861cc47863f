// An order service on Node's own http module, with an idempotency layer written here in the
// style of @node-idempotency/core (no dependency): the key's record is claimed before the
// handler runs; a request whose key is claimed and unfinished is answered 409 (in progress);
// the fingerprint is JSON.stringify of the parsed body (key order counts; whitespace and the
// spelling of a number do not) and another body under a used key is answered 422; a finished
// key replays the stored response, status and body, with no replay header; a handler's 5xx is
// stored like any answer (a retry gets the same failure); records never expire.
//
//   node layer_service.js --port 0 [--scope owner|header] [--fingerprint stringify|none]
//
// --scope owner (the clean variant) keys by owner and key; --scope header by the key alone.
// --fingerprint none never compares bodies (another body gets the first order).
// Owners: PRECISION_TOKENS ({"token": "owner"}), sent as "X-Api-Key: <token>". Prints
// "listening on http://127.0.0.1:PORT" once it listens.
'use strict';

const http = require('http');

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

const port = Number(option('port', '0'));
const scope = option('scope', 'owner');
const fingerprinting = option('fingerprint', 'stringify');
const workMs = Number(option('work-ms', '20'));
const tokens = JSON.parse(process.env.PRECISION_TOKENS || '{}');
const records = new Map(); // key -> {fingerprint, response: {status, body} | null}
const orders = new Map();
let made = 0;
let failNext = false;

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function fingerprint(text) {
  if (fingerprinting === 'none') return '';
  try {
    return JSON.stringify(JSON.parse(text));
  } catch (err) {
    return null;
  }
}

function handleOrder(owner, text, done) {
  setTimeout(() => {
    if (failNext) {
      failNext = false;
      done(500, { error: { code: 'HANDLER_FAILED' } });
      return;
    }
    made += 1;
    const order = { orderId: `o-${made}-${owner}`, owner, status: 'CREATED', rev: 3 };
    orders.set(order.orderId, order);
    done(201, { data: { orderId: order.orderId, status: order.status, rev: order.rev } });
  }, workMs);
}

function create(req, res, owner, text) {
  const key = req.headers['idempotency-key'];
  const print = fingerprint(text);
  if (print === null) return send(res, 400, { error: { code: 'BAD_JSON' } });
  if (!key) return handleOrder(owner, text, (status, body) => send(res, status, body));
  const id = scope === 'owner' ? `${owner}\u0000${key}` : key;
  const record = records.get(id);
  if (record) {
    if (record.fingerprint !== print) {
      return send(res, 422, { error: { code: 'IDEMPOTENCY_FINGERPRINT_MISMATCH' } });
    }
    if (!record.response) {
      return send(res, 409, { error: { code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' } });
    }
    return send(res, record.response.status, record.response.body);
  }
  const claimed = { fingerprint: print, response: null };
  records.set(id, claimed);
  handleOrder(owner, text, (status, body) => {
    claimed.response = { status, body };
    send(res, status, body);
  });
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    const url = req.url.split('?')[0];
    if (url === '/healthz') return send(res, 200, { ok: true });
    if (url === '/_stats') return send(res, 200, { made });
    if (url === '/_faults/fail-next' && req.method === 'POST') {
      failNext = true;
      return send(res, 200, { armed: true });
    }
    const owner = tokens[req.headers['x-api-key'] || ''];
    if (!owner) return send(res, 401, { error: { code: 'UNAUTHENTICATED' } });
    if (url === '/v2/orders' && req.method === 'POST') return create(req, res, owner, text);
    const match = /^\/v2\/orders\/([^/]+)$/.exec(url);
    if (match && req.method === 'GET') {
      const order = orders.get(decodeURIComponent(match[1]));
      if (!order || order.owner !== owner) return send(res, 404, { error: { code: 'NOT_FOUND' } });
      return send(res, 200, { data: { orderId: order.orderId, status: order.status, rev: order.rev } });
    }
    return send(res, 404, { error: { code: 'NO_ROUTE' } });
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
