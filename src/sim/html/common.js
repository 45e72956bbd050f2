'use strict';
// Shared by every w6w-sim page. The data is JSON in #w6w-data; every value reaches the
// page through textContent, a property or setAttribute, never as markup (D-292).
const DATA = JSON.parse(document.getElementById('w6w-data').textContent);
document.title = String(DATA.title || 'w6w-sim');

function el(tag, props) {
  const e = document.createElement(tag);
  const kids = Array.prototype.slice.call(arguments, 2);
  for (const k of Object.keys(props || {})) {
    const v = props[k];
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = String(v);
    else if (k === 'title') e.title = String(v);
    else if (k === 'onclick') e.addEventListener('click', v);
    else if (k.slice(0, 5) === 'data-') e.setAttribute(k, String(v));
    else throw new Error('el: unknown property ' + k);
  }
  for (const kid of kids) {
    if (kid === undefined || kid === null) continue;
    e.append(typeof kid === 'string' ? document.createTextNode(kid) : kid);
  }
  return e;
}

function pretty(v) {
  return v === undefined ? '' : JSON.stringify(v, null, 2);
}

function statusClass(status) {
  return 's-' + String(status || 'unknown').replace(/[^a-z]+/gi, '-').toLowerCase();
}

// The page is drawn: the browser test reads this attribute (and the lanes) from the DOM.
function rendered(count) {
  document.documentElement.setAttribute('data-rendered', String(count));
}
