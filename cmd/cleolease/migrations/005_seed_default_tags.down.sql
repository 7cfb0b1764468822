DELETE FROM tags WHERE name IN ('bug', 'feature', 'chore', 'docs', 'urgent');
