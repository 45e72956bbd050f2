// The per-clause table: candidates and their totals, every failure with its messages and
// the command that runs it again, then one row per clause with a cell per candidate.
// Data: src/conformance/html.rs matrix_model.
(function () {
  const D = DATA;
  const app = document.getElementById('app');
  const failedAny = D.candidates.some(function (c) { return c.totals.failed > 0; })
    || D.generatedFailures.length > 0;

  app.append(el('h1', {},
    el('span', { class: 'badge ' + (failedAny ? 's-failed' : 's-passed'), text: failedAny ? 'failed' : 'passed' }), ' ',
    el('span', { text: D.title })));
  const facts = el('ul', { class: 'facts', 'data-role': 'candidates' });
  for (const c of D.candidates) {
    const t = c.totals;
    const text = t.passed + ' passed, ' + t.failed + ' failed, ' + t.notApplicable + ' n/a of ' + t.cases + ' cases';
    facts.append(el('li', { 'data-candidate': c.name, title: c.implementation + ' — capabilities: ' + c.capabilities.join(',') },
      c.name + ': ', el('b', { text: text })));
  }
  app.append(facts);

  // Failures first: what broke, where, and how to see it again.
  const failures = el('div', { 'data-role': 'failures' });
  const boxes = [];
  function filterFailures(clause, candidate) {
    for (const b of boxes) {
      const show = clause === null || (b.f.candidate === candidate && b.f.clauses.indexOf(clause) >= 0);
      b.node.hidden = !show;
      b.node.classList.toggle('sel', clause !== null && show);
    }
    showAll.hidden = clause === null;
  }
  const showAll = el('button', { text: 'show every failure', onclick: function () { filterFailures(null, null); } });
  showAll.hidden = true;
  const total = D.failures.length + D.generatedFailures.length;
  // Open when it is short enough to read; a long list opens from a failed cell.
  const fold = el('details', { 'data-role': 'failures-fold' });
  fold.open = total <= 20;
  if (total) {
    fold.append(el('summary', { class: 'h2', text: 'Failures (' + total + ')' + (fold.open ? '' : ' — open, or click a ✗ cell for one clause') }), showAll);
    app.append(fold);
    for (const f of D.failures) {
      const c = D.candidates[f.candidate];
      const box = el('div', { class: 'failure', 'data-case': f.id, 'data-candidate': c.name },
        el('div', {}, el('b', { text: f.id }), ' ',
          el('span', { class: 'text', text: '[' + f.clauses.join(', ') + '] (' + f.file + ') — ' + c.name })));
      if (f.description) box.append(el('div', { class: 'text', text: f.description }));
      const ul = el('ul', {});
      for (const m of f.messages) ul.append(el('li', { class: 'mono', text: m }));
      if (f.adapterFailed) ul.append(el('li', { text: 'the candidate did not answer' }));
      box.append(ul);
      if (f.rerun) box.append(el('code', { class: 'cmd', text: f.rerun, title: 'run this case again' }));
      failures.append(box);
      boxes.push({ node: box, f: f });
    }
    for (const g of D.generatedFailures) {
      const c = D.candidates[g.candidate];
      const box = el('div', { class: 'failure', 'data-seed': String(g.seed), 'data-candidate': c.name },
        el('div', {}, el('b', { text: 'generated workflow, seed ' + g.seed }), ' ',
          el('span', { class: 'text', text: '[' + g.property + '] — ' + c.name })),
        el('div', { class: 'mono', text: g.message }));
      if (g.rerun) box.append(el('code', { class: 'cmd', text: g.rerun, title: 'check this workflow again' }));
      failures.append(box);
    }
    fold.append(failures);
  }

  // The table.
  app.append(el('h2', { text: 'Per clause' }));
  const onlyFailed = el('input', {});
  onlyFailed.type = 'checkbox';
  app.append(el('label', { class: 'filter' }, onlyFailed, ' only clauses with a failure'));
  const table = el('table', { class: 'matrix', 'data-role': 'clauses' });
  const head = el('tr', {}, el('th', { text: 'clause' }));
  for (const c of D.candidates) head.append(el('th', { text: c.name, title: c.implementation }));
  table.append(el('thead', {}, head));
  const body = el('tbody', {});
  const rows = [];
  for (const r of D.clauses) {
    const cells = D.candidates.map(function (c) { return r.results[c.name]; });
    const failed = cells.some(function (c) { return c.failed > 0; });
    const tr = el('tr', { 'data-clause': r.clause, 'data-failed': failed ? 'yes' : 'no' },
      el('td', {}, el('b', { text: r.clause }), ' ', el('span', { class: 'text', text: r.text })));
    cells.forEach(function (c, i) {
      const parts = [];
      if (c.failed) parts.push('✗ ' + c.failed);
      if (c.passed) parts.push('✓ ' + c.passed);
      if (c.notApplicable) parts.push('n/a ' + c.notApplicable);
      const cls = c.failed ? 'c-failed' : c.passed ? 'c-passed' : c.notApplicable ? 'c-na' : '';
      const td = el('td', { class: 'cell ' + cls, text: parts.length ? parts.join(' ') : '·',
        'data-candidate': D.candidates[i].name, 'data-failed': String(c.failed),
        'data-passed': String(c.passed), 'data-na': String(c.notApplicable) });
      if (c.failed) {
        td.title = 'show these failures';
        td.addEventListener('click', function () {
          filterFailures(r.clause, i);
          fold.open = true;
          fold.scrollIntoView();
        });
      }
      tr.append(td);
    });
    body.append(tr);
    rows.push(tr);
  }
  table.append(body);
  app.append(table);
  onlyFailed.addEventListener('change', function () {
    for (const tr of rows) tr.hidden = onlyFailed.checked && tr.getAttribute('data-failed') !== 'yes';
  });
  app.append(el('p', { class: 'legend', text: '✓ passed · ✗ failed · n/a outside the candidate\'s capability profile (never counted as passed) · · no case selected' }));
  rendered(D.clauses.length);
})();
