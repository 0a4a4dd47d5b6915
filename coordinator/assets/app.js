// pvefleet dashboard: keeps the live part of the page current over server-sent events and
// says when the connection is lost. No inline script anywhere (the CSP forbids it).
(function () {
  "use strict";
  var main = document.getElementById("live");
  var conn = document.getElementById("conn");
  function show(state, text) {
    if (!conn) { return; }
    conn.setAttribute("data-state", state);
    conn.textContent = text;
    document.body.setAttribute("data-conn", state);
  }
  if (!main || !main.getAttribute("data-live")) {
    show("still", "not live");
    return;
  }
  var src = main.getAttribute("data-live");
  var source = null;
  var retry = 1000;
  function connect() {
    source = new EventSource(src);
    source.addEventListener("open", function () {
      retry = 1000;
      show("live", "live");
    });
    source.addEventListener("page", function (ev) {
      // The server renders and escapes the fragment; it is our own markup.
      main.innerHTML = ev.data;
      main.setAttribute("data-version", ev.lastEventId);
      document.body.setAttribute("data-updated", String(Date.now()));
      document.dispatchEvent(new Event("pvefleet:updated"));
    });
    source.addEventListener("gone", function () {
      source.close();
      show("lost", "session ended: log in again");
      window.location.assign("/login");
    });
    source.addEventListener("error", function () {
      show("lost", "connection lost: reconnecting…");
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (the server refused the stream): try again, slower each time.
        window.setTimeout(connect, retry);
        retry = Math.min(retry * 2, 15000);
      }
    });
  }
  connect();
})();
// Instants as ages ("12 s ago"), kept current here: the server sends instants only, so a page
// changes when the fleet does, not every second.
(function () {
  "use strict";
  function age(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 120) { return s + " s ago"; }
    if (s < 7200) { return Math.floor(s / 60) + " min ago"; }
    if (s < 172800) { return Math.floor(s / 3600) + " h ago"; }
    return Math.floor(s / 86400) + " days ago";
  }
  function tick() {
    var now = Date.now();
    var times = document.querySelectorAll("time[data-at]");
    for (var i = 0; i < times.length; i++) {
      var at = Number(times[i].getAttribute("data-at"));
      if (!times[i].getAttribute("title")) { times[i].setAttribute("title", times[i].textContent); }
      if (at > 0) { times[i].textContent = age(now - at); }
    }
  }
  tick();
  document.addEventListener("pvefleet:updated", tick);
  window.setInterval(tick, 1000);
})();
