// pvefleet dashboard login: `pvefleet dashboard login` prints a link whose fragment carries the
// one-time token (a fragment never reaches a server log or a Referer header). Take it, forget
// it from the address bar and history, and log in.
(function () {
  "use strict";
  var hash = window.location.hash || "";
  var prefix = "#token=";
  if (hash.indexOf(prefix) !== 0) { return; }
  var token = decodeURIComponent(hash.slice(prefix.length));
  window.history.replaceState(null, "", window.location.pathname);
  var input = document.getElementById("token");
  var form = document.getElementById("login");
  if (!input || !form || !token) { return; }
  input.value = token;
  form.submit();
})();
