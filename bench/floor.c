/* floor: the least a program reading a file could do with it, for `make
 * bench` to measure each benchmark against, in the same run:
 *
 *   floor yaml FILE    libyaml's bare event parse of every document (each
 *                      event made and freed: no tree, no values kept)
 *   floor json FILE    jansson's json_load_file (the whole tree, then freed)
 *
 * Exit 0 when the file parses, 1 when it does not. */
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <yaml.h>

static int yaml_floor(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    yaml_parser_t p;
    yaml_event_t e;
    if (!yaml_parser_initialize(&p)) return 1;
    yaml_parser_set_input_file(&p, f);
    int ok = 1;
    for (;;) {
        if (!yaml_parser_parse(&p, &e)) { ok = 0; break; }
        int end = e.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&e);
        if (end) break;
    }
    if (!ok) fprintf(stderr, "%s: %s\n", path, p.problem ? p.problem : "parse error");
    yaml_parser_delete(&p);
    fclose(f);
    return !ok;
}

static int json_floor(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) { fprintf(stderr, "%s:%d: %s\n", path, err.line, err.text); return 1; }
    json_decref(j);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "yaml") == 0) return yaml_floor(argv[2]);
    if (argc == 3 && strcmp(argv[1], "json") == 0) return json_floor(argv[2]);
    fprintf(stderr, "usage: floor yaml|json FILE\n");
    return 2;
}
