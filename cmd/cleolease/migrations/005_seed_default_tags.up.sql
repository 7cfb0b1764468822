-- Reference data every installation starts with.
INSERT INTO tags (name, color) VALUES
    ('bug',      '#d73a4a'),
    ('feature',  '#a2eeef'),
    ('chore',    '#cfd3d7'),
    ('docs',     '#0075ca'),
    ('urgent',   '#b60205');
