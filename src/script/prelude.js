// The sandbox a script body runs in (src/script/mod.rs). Evaluated once per attempt in a
// fresh QuickJS context; it receives the host's one function and the attempt's settings,
// installs the deterministic globals (Date, Math.random, timers on the virtual clock) and
// returns the driver the Rust side steps. Everything the script can reach is built here:
// the host function itself is never a global.
(function (host, cfg) {
  "use strict";
  // Captured before the script runs: a script that replaces a builtin changes only what
  // its own code sees, and the host checks every text it is handed anyway.
  const stringify = JSON.stringify, parse = JSON.parse;
  const RangeErr = RangeError, InternalErr = globalThis.InternalError;
  const start = cfg.startMs;
  let now = start;
  const timers = [];
  let seq = 0;
  const live = new Set();
  let timerIds = 0;
  const schedule = (at, fn) => { timers.push({ at, seq: seq++, fn }); };
  const tick = () => {
    if (timers.length === 0) return -1;
    let best = 0;
    for (let i = 1; i < timers.length; i++) {
      const t = timers[i], b = timers[best];
      if (t.at < b.at || (t.at === b.at && t.seq < b.seq)) best = i;
    }
    return best;
  };
  const nextAt = () => { const i = tick(); return i < 0 ? -1 : timers[i].at; };
  const fire = () => {
    const i = tick();
    if (i < 0) return false;
    const t = timers.splice(i, 1)[0];
    if (t.at > now) now = t.at;
    t.fn();
    return true;
  };
  const delay = (ms) => { const n = Number(ms); return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0; };
  const setTimeout = (fn, ms, ...args) => {
    const id = ++timerIds;
    live.add(id);
    schedule(now + delay(ms), () => { if (live.delete(id) && typeof fn === "function") fn(...args); });
    return id;
  };
  const setInterval = (fn, ms, ...args) => {
    const id = ++timerIds;
    live.add(id);
    const every = Math.max(1, delay(ms));
    const again = () => {
      if (!live.has(id)) return;
      schedule(now + every, again);
      if (typeof fn === "function") fn(...args);
    };
    schedule(now + every, again);
    return id;
  };
  const clearTimer = (id) => { live.delete(id); };

  // Date on the virtual clock, in UTC (the host's time zone never shows).
  const RealDate = Date;
  function VDate(...a) {
    if (!new.target) return new RealDate(now).toISOString();
    return a.length === 0 ? new RealDate(now) : new RealDate(...a);
  }
  VDate.prototype = RealDate.prototype;
  Object.defineProperty(RealDate.prototype, "constructor", { value: VDate, writable: true, configurable: true });
  VDate.now = () => now;
  VDate.UTC = RealDate.UTC;
  VDate.parse = RealDate.parse;
  const P = RealDate.prototype;
  for (const part of ["FullYear", "Month", "Date", "Day", "Hours", "Minutes", "Seconds", "Milliseconds"]) {
    P["get" + part] = P["getUTC" + part];
    if (P["setUTC" + part]) P["set" + part] = P["setUTC" + part];
  }
  P.getTimezoneOffset = function () { return 0; };
  P.toString = P.toLocaleString = function () { return this.toISOString(); };
  P.toDateString = P.toLocaleDateString = function () { return this.toISOString().slice(0, 10); };
  P.toTimeString = P.toLocaleTimeString = function () { return this.toISOString().slice(11); };

  // Math.random from the attempt's seed (sfc32).
  let [a, b, c, d] = cfg.seed;
  Math.random = function random() {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };

  const g = globalThis;
  g.Date = VDate;
  g.setTimeout = setTimeout;
  g.setInterval = setInterval;
  g.clearTimeout = clearTimer;
  g.clearInterval = clearTimer;
  g.queueMicrotask = (fn) => { Promise.resolve().then(fn); };

  // Calls to the outside world: answered by the host from the scenario, settled on the
  // virtual clock after the answer's latency.
  const pending = new Map();
  const call = (request) => new Promise((resolve, reject) => {
    const id = host("call", stringify(request), now);
    pending.set(id, { resolve, reject });
  });
  const deliver = (id, answerText) => {
    const p = pending.get(id);
    pending.delete(id);
    const answer = parse(answerText);
    schedule(now + answer.latencyMs, () => {
      if ("error" in answer) {
        const e = new Error(answer.error.message);
        e.code = answer.error.code;
        if (answer.error.details !== undefined) e.details = answer.error.details;
        p.reject(e);
      } else {
        p.resolve(answer.output);
      }
    });
  };
  const plain = (v) => { const s = v === undefined ? undefined : stringify(v); return s === undefined ? null : parse(s); };
  const services = new Proxy({}, {
    get(_, service) {
      if (typeof service !== "string") return undefined;
      return new Proxy({}, {
        get(_, method) {
          if (typeof method !== "string") return undefined;
          return (args, options) => call({
            kind: "service", service, method, args: plain(args),
            name: options && typeof options.name === "string" ? options.name : null,
          });
        },
      });
    },
  });
  const fetch = (url, init) => {
    init = init || {};
    let body = init.body === undefined ? null : init.body;
    return call({
      kind: "fetch", url: String(url), method: String(init.method || "GET").toUpperCase(),
      headers: plain(init.headers || {}), body: typeof body === "string" ? body : plain(body),
      name: typeof init.name === "string" ? init.name : null,
    }).then((out) => {
      out = out && typeof out === "object" ? out : { body: out };
      const status = Number.isInteger(out.status) ? out.status : 200;
      const headers = out.headers && typeof out.headers === "object" ? out.headers : {};
      const raw = out.body === undefined ? null : out.body;
      const text = typeof raw === "string" ? raw : JSON.stringify(raw);
      return Object.freeze({
        ok: status >= 200 && status < 300, status,
        headers: Object.freeze({ get: (k) => { const v = headers[String(k).toLowerCase()]; return v === undefined ? null : String(v); } }),
        text: async () => text,
        json: async () => (typeof raw === "string" ? JSON.parse(raw) : raw),
      });
    });
  };
  const show = (v) => {
    if (typeof v === "string") return v;
    try { const s = stringify(v); return s === undefined ? String(v) : s; } catch (_) { return String(v); }
  };
  let lines = 0;
  const line = (level) => (...args) => {
    // Past the cap a line is not even formatted: a logging loop costs only its own steps.
    if (++lines > cfg.consoleLines) return;
    let text = args.map(show).join(" ");
    if (text.length > cfg.consoleChars) text = text.slice(0, cfg.consoleChars) + "…";
    host("console", stringify({ level, text }), now);
  };
  const console = Object.freeze({
    log: line("info"), info: line("info"), debug: line("debug"), warn: line("warn"), error: line("error"),
  });

  const deepFreeze = (v) => {
    if (v && typeof v === "object") {
      for (const k of Object.keys(v)) deepFreeze(v[k]);
      Object.freeze(v);
    }
    return v;
  };
  const RESERVED = new Set(("break case catch class const continue debugger default delete do else " +
    "enum export extends false finally for function if implements import in instanceof " +
    "interface let new null package private protected public return static super switch " +
    "this throw true try typeof var void while with yield await arguments eval undefined " +
    "NaN Infinity").split(" "));
  const bindings = parse(cfg.bindings);
  let names, values;
  if (cfg.style === "woml") {
    const context = {};
    const payload = deepFreeze(bindings.context.payload === undefined ? null : bindings.context.payload);
    Object.defineProperty(context, "payload", { value: payload, enumerable: true });
    // WOML-14: the deprecated alias, not enumerable (new source uses payload).
    Object.defineProperty(context, "trigger", { value: payload, enumerable: false });
    Object.defineProperty(context, "steps", { value: deepFreeze(bindings.context.steps || {}), enumerable: true });
    Object.freeze(context);
    names = ["context", "attempt", "services", "secrets", "fetch", "console"];
    values = [context, deepFreeze(bindings.attempt), services, deepFreeze(bindings.secrets || {}), fetch, console];
  } else {
    // YAML: the trigger's payload as `message` and each earlier step by its id (YML-5),
    // where the id is a usable parameter name; `steps` holds them all, any id.
    const steps = deepFreeze(bindings.steps || {});
    names = ["message", "steps", "attempt", "services", "fetch", "console"];
    values = [deepFreeze(bindings.message === undefined ? null : bindings.message), steps,
      deepFreeze(bindings.attempt), services, fetch, console];
    const taken = new Set(names);
    for (const id of Object.keys(steps)) {
      if (/^[A-Za-z_$][\w$]*$/.test(id) && !RESERVED.has(id) && !taken.has(id)) {
        taken.add(id);
        names.push(id);
        values.push(steps[id]);
      }
    }
  }

  let state = "pending", value, reason;
  const begin = (body) => {
    const AsyncFunction = (async function () {}).constructor;
    const f = new AsyncFunction(...names, body);
    f.apply(undefined, values).then(
      (v) => { state = "fulfilled"; value = v; },
      (e) => { state = "rejected"; reason = e; },
    );
  };
  const describe = (e) => {
    if (e instanceof Error) return (e.name ? e.name + ": " : "") + e.message;
    return "a non-Error value was thrown: " + show(e);
  };
  // The settled outcome: ["ok", JSON text] | ["threw", message] | ["invalid", why].
  const outcome = () => {
    if (state === "pending") return null;
    if (state === "rejected") return ["threw", describe(reason)];
    if (value === undefined) return ["ok", "null"];
    let text;
    try { text = stringify(value); } catch (e) {
      // Out of memory or stack while writing it: the value is too large, not malformed.
      const big = e instanceof RangeErr || (InternalErr !== undefined && e instanceof InternalErr);
      return [big ? "size" : "invalid", describe(e)];
    }
    if (typeof text !== "string") return ["invalid", "the script returned a " + typeof value + ", which JSON cannot hold"];
    return ["ok", text];
  };
  return {
    begin, fire, outcome, deliver,
    nextAt, elapsed: () => now - start,
  };
})
