// The run page: headline, what happened, the timeline (one lane per step or strand on the
// virtual clock) and the details of whatever was clicked. Data: src/sim/html.rs run_model.
(function () {
  const D = DATA;
  const app = document.getElementById('app');
  const span = Math.max(D.end - D.origin, 0);

  function since(ms) {
    if (ms === null || ms === undefined) return '';
    const d = ms - D.origin;
    if (Math.abs(d) < 1000) return '+' + d + ' ms';
    if (Math.abs(d) < 120000) return '+' + (d / 1000).toFixed(3) + ' s';
    return '+' + (d / 60000).toFixed(2) + ' min';
  }
  function iso(ms) {
    try { return new Date(ms).toISOString(); } catch (e) { return String(ms); }
  }
  function pct(ms) {
    return span === 0 ? 0 : ((ms - D.origin) / span) * 100;
  }
  function place(node, from, to) {
    const left = pct(from);
    node.style.left = left + '%';
    node.style.width = Math.max(pct(to) - left, 0) + '%';
    return node;
  }

  // Header: the status and the one sentence that says what happened and why.
  const s = D.summary;
  app.append(el('h1', {},
    el('span', { class: 'badge ' + statusClass(s.status), text: s.status || 'unknown' }), ' ',
    el('span', { text: D.title })));
  app.append(el('p', { class: 'headline', text: s.headline }));
  const facts = el('ul', { class: 'facts' });
  for (const f of s.facts) facts.append(el('li', {}, f[0] + ': ', el('b', { text: f[1] === null ? '—' : String(f[1]) })));
  facts.append(el('li', {}, 'clock: ', el('b', { text: iso(D.origin) + ' → ' + iso(D.end) })));
  app.append(facts);
  if (s.notes.length) {
    const notes = el('ul', { class: 'notes' });
    for (const n of s.notes) notes.append(el('li', { text: n }));
    app.append(notes);
  }

  const layout = el('div', { class: 'layout' });
  const left = el('div', {});
  const aside = el('aside', { 'data-role': 'details' });
  layout.append(left, aside);
  app.append(layout);

  // Details of a lane (its record as the report holds it) or of one bar on it.
  function field(dl, k, v) {
    if (v === undefined || v === null || v === '') return;
    dl.append(el('dt', { text: k }), el('dd', { text: String(v) }));
  }
  function json(title, v) {
    if (v === undefined || v === null) return;
    aside.append(el('h4', { text: title }), el('pre', { text: pretty(v) }));
  }
  function showLane(lane) {
    aside.replaceChildren();
    aside.append(el('h3', {}, el('span', { class: 'badge ' + statusClass(lane.status), text: lane.status || '—' }), ' ',
      lane.kind === 'run' ? 'the run' : (lane.step || lane.strand)));
    const dl = el('dl', {});
    field(dl, 'strand', lane.strand);
    field(dl, 'child run', lane.runId);
    field(dl, 'note', lane.note);
    field(dl, 'from', lane.from === null ? '' : since(lane.from) + ' (' + iso(lane.from) + ')');
    field(dl, 'to', lane.to === null ? '' : since(lane.to) + ' (' + iso(lane.to) + ')');
    const tried = lane.segments.filter(function (g) { return g.kind === 'attempt'; }).length;
    if (tried) field(dl, 'invocations', tried);
    aside.append(dl);
    const r = lane.record || {};
    json('error', r.error);
    json('output', r.output);
    json('input', r.input);
    json('record', r);
  }
  function showSegment(lane, g) {
    aside.replaceChildren();
    aside.append(el('h3', { text: (lane.step || 'run') + ' · ' + g.label }));
    const dl = el('dl', {});
    field(dl, 'kind', g.kind);
    field(dl, 'outcome', g.outcome);
    field(dl, 'from', since(g.from) + ' (' + iso(g.from) + ')');
    field(dl, 'to', since(g.to) + ' (' + iso(g.to) + ')');
    field(dl, 'lasted', (g.to - g.from) + ' ms');
    aside.append(dl);
    const d = g.detail || {};
    json('error', d.error);
    json('output', d.output);
    json('params', d.params);
    json('everything recorded', d);
  }

  // What happened, in order.
  left.append(el('h2', { text: 'What happened' }));
  const events = el('ol', { class: 'events', 'data-role': 'events' });
  for (const e of D.events) {
    events.append(el('li', { class: 'l-' + e.level, 'data-level': e.level },
      el('span', { class: 't mono', text: since(e.at), title: e.at === null ? '' : iso(e.at) }),
      el('span', { text: e.text })));
  }
  if (!D.events.length) events.append(el('li', { text: 'No events were recorded for this view.' }));
  left.append(events);

  // The timeline.
  left.append(el('h2', { text: 'Timeline (virtual clock)' }));
  left.append(el('div', { class: 'legend' },
    el('span', {}, el('i', { class: 'seg attempt o-succeeded', title: 'attempt succeeded' }), 'attempt ok'),
    el('span', {}, el('i', { class: 'seg attempt o-failed' }), 'attempt failed'),
    el('span', {}, el('i', { class: 'seg attempt o-crashed' }), 'crashed'),
    el('span', {}, el('i', { class: 'seg attempt o-canceled' }), 'canceled'),
    el('span', {}, el('i', { class: 'seg backoff' }), 'backoff'),
    el('span', {}, el('i', { class: 'seg waiting' }), 'suspended / waiting'),
    el('span', { text: '| red line: crash · dashed blue: restart · purple: wake-up' })));
  const axis = el('div', { class: 'axis' }, el('div', {}), el('div', { class: 'track' }));
  const ticks = axis.lastChild;
  for (let i = 0; i <= (span === 0 ? 0 : 4); i++) {
    const at = D.origin + (span * i) / 4;
    const t = el('span', { class: 'tick mono', text: since(Math.round(at)) });
    t.style.left = (i * 25) + '%';
    ticks.append(t);
  }
  left.append(axis);
  const lanes = el('div', { 'data-role': 'lanes' });
  let selected = null;
  function select(row, lane) {
    if (selected) selected.classList.remove('sel');
    selected = row;
    row.classList.add('sel');
    showLane(lane);
  }
  const rows = [];
  const runMarks = (D.lanes.length ? D.lanes[0].marks : []).filter(function (m) {
    return m.kind === 'crash' || m.kind === 'restart';
  });
  for (const lane of D.lanes) {
    const row = el('div', {
      class: 'lane k-' + lane.kind, 'data-kind': lane.kind, 'data-key': lane.key,
      'data-step': lane.step, 'data-status': lane.status,
    });
    row.tabIndex = 0;
    const label = el('div', { class: 'label' });
    label.style.paddingLeft = (6 + 14 * lane.depth) + 'px';
    const name = lane.kind === 'run' ? 'run' : lane.kind === 'strand' ? lane.strand : lane.step;
    label.append(el('span', { class: 'name', text: name }));
    if (lane.strand && lane.kind !== 'strand') label.append(el('span', { class: 'strand', text: lane.strand }));
    label.append(' ', el('span', { class: 'badge ' + statusClass(lane.status), text: lane.status || '—' }));
    const tries = lane.segments.filter(function (g) { return g.kind === 'attempt'; }).length;
    if (tries > 1) label.append(el('span', { class: 'strand', text: '×' + tries }));
    if (lane.note) label.append(el('span', { class: 'note', text: lane.note, title: lane.note }));
    const track = el('div', { class: 'track' });
    if (lane.from !== null) {
      track.append(place(el('div', { class: 'window', title: 'recorded ' + since(lane.from) + ' → ' + (lane.to === null ? 'not finished' : since(lane.to)) }),
        lane.from, lane.to === null ? D.end : lane.to));
    }
    for (const g of lane.segments) {
      const bar = place(el('div', {
        class: 'seg ' + g.kind + (g.outcome ? ' o-' + g.outcome : ''),
        'data-kind': g.kind, 'data-outcome': g.outcome,
        title: g.label + ' (' + since(g.from) + ' → ' + since(g.to) + ')',
      }), g.from, g.to);
      bar.addEventListener('click', function (ev) {
        ev.stopPropagation();
        select(row, lane);
        showSegment(lane, g);
      });
      track.append(bar);
    }
    // A crash or a restart stops every lane: its line crosses them all.
    const crossing = lane.kind === 'run' ? [] : runMarks;
    for (const m of crossing) {
      const line = el('div', { class: 'mark cross m-' + m.kind, title: since(m.at) + ' ' + m.label });
      line.style.left = pct(m.at) + '%';
      track.append(line);
    }
    for (const m of lane.marks) {
      const mark = el('div', { class: 'mark m-' + m.kind, 'data-kind': m.kind, title: since(m.at) + ' ' + m.label });
      mark.style.left = pct(m.at) + '%';
      track.append(mark);
    }
    row.append(label, track);
    row.addEventListener('click', function () { select(row, lane); });
    row.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') select(row, lane); });
    lanes.append(row);
    rows.push([row, lane]);
  }
  left.append(lanes);

  // Open on what matters: the step the run failed at, else the run itself.
  const failedAt = s.error && s.error.stepId;
  const first = rows.find(function (r) { return failedAt && r[1].kind === 'step' && r[1].step === failedAt && !r[1].strand; })
    || rows[0];
  if (first) select(first[0], first[1]);
  rendered(D.lanes.length);
})();
