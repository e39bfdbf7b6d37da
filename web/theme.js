// Sets the panel's theme before the page is drawn (no flash of the other one): the user's choice
// from the toggle, else the system's prefers-color-scheme. panel.js owns the toggle.
'use strict';
(() => {
  const chosen = localStorage.getItem('agenthost-theme');
  const dark = chosen ? chosen === 'dark' : window.matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
})();
