// The "post" mode's worker (www/bench/drag/drag.js `openPost`): answers each message with its
// id and does nothing else, so the page's cost is only posting the intents and taking a reply.
onmessage = ({ data }) => postMessage(data.id);
