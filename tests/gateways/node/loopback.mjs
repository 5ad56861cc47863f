// Preloaded with `node --import ./loopback.mjs`: the Portkey gateway calls
// @hono/node-server's serve() without a hostname, and Node then listens on every interface.
// This keeps any listen(port) without a host on 127.0.0.1 (the tests' gateway stays on loopback).
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && typeof args[1] !== "string") {
    args.splice(1, args[1] === undefined ? 1 : 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
