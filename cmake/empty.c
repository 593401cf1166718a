/* Placeholder translation unit for targets made only of static libraries. */
typedef int spate_empty_translation_unit;
