// The SPA fixture's script bundle. The HTML is an empty shell: this script
// reads the route from location.pathname, fetches its JSON (/api/...),
// and renders the title, text, an image and the links; a route link is
// followed in the page by history.pushState; images far below the fold
// load only when scrolled into view (IntersectionObserver); a second web
// font is loaded by the FontFace API. When done it sets
// #app[data-ready] to "ok" (or "error" if the JSON failed), after the
// fonts and the hero image are in, so a probe (and a screenshot of the
// viewport) sees the render complete.
(function () {
  'use strict';
  var ASSETS = '__ASSETS__';
  var app = document.getElementById('app');
  var mono = new FontFace('ZkSpaMono', 'url(' + ASSETS + '/font/mono.ttf) format("truetype")');
  document.fonts.add(mono);
  var monoLoaded = mono.load().catch(function () {});

  var lazy = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (!e.isIntersecting) return;
      lazy.unobserve(e.target);
      e.target.src = e.target.getAttribute('data-src');
      e.target.classList.remove('loading');
    });
  });

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text) n.textContent = text;
    return n;
  }

  function img(name) {
    return ASSETS + '/img/' + name + '.png';
  }

  function href(link) {
    if (link.kind === 'page') return '/page/' + link.id;
    if (link.kind === 'route') return '/app/route/' + link.name;
    return '/';
  }

  function jsonOf(path) {
    var m = /^\/page\/([0-9]+)$/.exec(path);
    if (m) return '/api/page/' + m[1] + '.json';
    m = /^\/app\/route\/([a-z]+)$/.exec(path);
    if (m) return '/api/route/' + m[1] + '.json';
    return '/api/pages.json';
  }

  var heroLoaded = Promise.resolve();

  function render(d) {
    var header = el('header');
    header.appendChild(el('h1', '', d.title));
    app.appendChild(header);
    var main = el('main');
    main.appendChild(el('p', '', d.text));
    var hero = el('img', 'hero');
    hero.alt = d.title;
    hero.src = img(d.hero);
    main.appendChild(hero);
    heroLoaded = hero.decode().catch(function () {});
    var nav = el('nav');
    d.links.forEach(function (l) {
      var a = el('a', '', l.label);
      a.href = href(l);
      if (l.kind === 'route') {
        a.addEventListener('click', function (ev) {
          ev.preventDefault();
          history.pushState({route: l.name}, '', a.href);
          show();
        });
      }
      nav.appendChild(a);
    });
    main.appendChild(nav);
    main.appendChild(el('div', 'fold'));
    d.lazy.forEach(function (name) {
      var i = el('img', 'lazy loading');
      i.alt = name;
      i.setAttribute('data-src', img(name));
      main.appendChild(i);
      lazy.observe(i);
    });
    app.appendChild(main);
  }

  function show() {
    app.removeAttribute('data-ready');
    app.textContent = '';
    var wait = el('p', 'loading', 'Loading\u2026');
    app.appendChild(wait);
    var path = jsonOf(location.pathname);
    fetch(path).then(function (r) {
      if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
      return r.json();
    }).then(function (d) {
      app.removeChild(wait);
      render(d);
      return Promise.all([monoLoaded, heroLoaded]).then(function () { return document.fonts.ready; }).then(function () {
        app.setAttribute('data-ready', 'ok');
      });
    }).catch(function (err) {
      app.textContent = '';
      var header = el('header');
      header.appendChild(el('h1', 'error', 'Not loaded'));
      app.appendChild(header);
      app.appendChild(el('p', 'error', String(err)));
      app.setAttribute('data-ready', 'error');
    });
  }

  window.addEventListener('popstate', show);
  show();
})();
