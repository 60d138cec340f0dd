package main

// Store methods only tests use.

// AddComment stores a new comment by authorID on post postID.
func (s *Store) AddComment(postID, authorID int64, text string) (*Comment, error) {
	c, err := s.AddAuthoredComment(postID, authorID, text)
	return c.Comment, err
}

// CommentsOnPost returns the comments on post postID in id order.
func (s *Store) CommentsOnPost(postID int64) []*Comment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return lookup(&s.comments, s.commentsByPost[postID])
}

// Posts, Comments, Products and Orders return every record of their kind in id order.
func (s *Store) Posts() []*Post       { return readTable(s, &s.posts) }
func (s *Store) Comments() []*Comment { return readTable(s, &s.comments) }
func (s *Store) Products() []*Product { return readTable(s, &s.products) }
func (s *Store) Orders() []*Order     { return readTable(s, &s.orders) }
