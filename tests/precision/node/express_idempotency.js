// An order service on express 4 behind express-idempotency 1.0.6 (memory adapter, defaults),
// written from the middleware's README: the handler checks isHit() and returns on a hit;
// concurrent duplicates are answered 409, a misused key 417, a replay is the cached response
// (same status, no replay header). Non-2xx answers are not cached (the key is released).
//
//   node express_idempotency.js --port 0 [--scope owner|header] [--fault 500|raise]
//
// --scope owner (the clean variant) keys by owner and Idempotency-Key, by putting the owner in
// front of the key before the middleware reads it; --scope header is the middleware as shipped
// (the key is the header alone). --fault 500: the armed fault makes the handler answer a JSON
// 500; --fault raise: the handler throws and express's own error handler answers (HTML 500,
// written with res.end: the middleware never learns of it, so the key stays "in progress").
// Owners come from PRECISION_TOKENS ({"token": "owner"}, bearer tokens). Prints
// "listening on http://127.0.0.1:PORT" once it listens.
'use strict';

const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

const port = Number(option('port', '0'));
const scope = option('scope', 'owner');
const fault = option('fault', '500');
const workMs = Number(option('work-ms', '20'));
const tokens = JSON.parse(process.env.PRECISION_TOKENS || '{}');
const orders = new Map();
let created = 0;
let failNext = false;

const app = express();
app.use(express.json());
app.get('/healthz', (req, res) => res.json({ ok: true }));
app.get('/_stats', (req, res) => res.json({ orders: created }));
app.post('/_faults/fail-next', (req, res) => {
  failNext = true;
  res.json({ armed: fault });
});

function owner(req, res, next) {
  const header = req.get('authorization') || '';
  const who = tokens[header.replace(/^Bearer /, '')];
  if (!who) {
    res.status(401).json({ code: 'unauthenticated' });
    return;
  }
  req.owner = who;
  next();
}

app.use('/orders', owner);
if (scope === 'owner') {
  app.post('/orders', (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key) req.headers['idempotency-key'] = `${req.owner}:${key}`;
    next();
  });
}
app.post('/orders', idempotency());
app.post('/orders', (req, res, next) => {
  if (getSharedIdempotencyService().isHit(req)) return;
  setTimeout(() => {
    if (failNext) {
      failNext = false;
      if (fault === 'raise') {
        next(new Error('the order handler failed'));
        return;
      }
      res.status(500).json({ code: 'handler_failed' });
      return;
    }
    created += 1;
    const order = { id: `ord_${created}`, owner: req.owner, state: 'created', version: 1,
                    body: req.body };
    orders.set(order.id, order);
    res.status(201).json({ order: { id: order.id, state: order.state, version: order.version } });
  }, workMs);
});
app.get('/orders/:id', (req, res) => {
  const order = orders.get(req.params.id);
  if (!order || order.owner !== req.owner) {
    res.status(404).json({ code: 'not_found' });
    return;
  }
  res.json({ order: { id: order.id, state: order.state, version: order.version } });
});
// The middleware's own refusals (409 in progress, 417 misused key) arrive here with their
// status set; so does the raising handler's error, which goes to express's default handler.
app.use((err, req, res, next) => {
  if (res.statusCode === 409 || res.statusCode === 417) {
    res.json({ code: res.statusCode === 409 ? 'in_progress' : 'key_misused', message: err.message });
    return;
  }
  next(err);
});

const server = app.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
