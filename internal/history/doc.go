// Package history gives agents tools over their own past: list_threads,
// search_history, get_thread, find_relevant and search_all search and page
// through session histories (full-text, BM25), and wm_set, wm_get and
// wm_delete keep a session's working memory, a key-value store whose every
// change is an event of the session's log.
package history
