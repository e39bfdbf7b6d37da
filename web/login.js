// The login page's one job: keep the session's header secret the server put in this page (never
// the token) in this origin's storage for the panel to send, then open the panel.
'use strict';
const session = document.querySelector('meta[name="agenthost-session"]');
if (session) localStorage.setItem('agenthost-session', session.content);
location.replace('/');
