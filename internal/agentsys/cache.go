package agentsys

import (
	"container/list"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// entry is a cached instance: its row as created (the fields that do not
// change) and the definition derived from its template's.
type entry struct {
	in  store.Instance
	tpl *agent.Definition // the template's definition def was derived from
	def *agent.Definition
}

// lru is a least-recently-used map of entries, bounded to size. Not safe
// for concurrent use (System.mu guards it).
type lru struct {
	size  int
	order *list.List // front: most recent; values are *lruItem
	items map[string]*list.Element
}

type lruItem struct {
	key string
	e   *entry
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), items: make(map[string]*list.Element)}
}

func (c *lru) get(key string) (*entry, bool) {
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem).e, true
}

func (c *lru) put(key string, e *entry) {
	if el, ok := c.items[key]; ok {
		el.Value.(*lruItem).e = e
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&lruItem{key, e})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruItem).key)
	}
}
